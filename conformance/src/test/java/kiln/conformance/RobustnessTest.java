package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import kiln.http.Limits;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Hostile clients, for every front end: malformed and oversized requests, request smuggling,
 * slowloris, idle keep-alive connections, more connections than the cap, and thousands of clients
 * that vanish mid-request. After each case the server must answer a normal request on a new
 * connection within {@value #SERVE_WITHIN_MS} ms. The servers of this class run with short limits
 * ({@value #HEADER_TIMEOUT_MS} ms header timeout, {@value #IDLE_TIMEOUT_MS} ms idle timeout) so the
 * timeouts can be seen in a few seconds; durations asserted are generous upper bounds on those
 * timeouts, not speed checks.
 */
class RobustnessTest {
    static final int HEADER_TIMEOUT_MS = 1_500;
    static final int IDLE_TIMEOUT_MS = 3_000;
    static final int SERVE_WITHIN_MS = 2_000;

    @RegisterExtension
    static final Servers SERVERS = new Servers("RobustnessTest",
        "--header-timeout", Integer.toString(HEADER_TIMEOUT_MS), "--idle-timeout", Integer.toString(IDLE_TIMEOUT_MS));

    private static final String HOST = "Host: 127.0.0.1\r\n";

    /** How a case's answer may differ by front end. */
    enum Limit {
        /** a plain framing or syntax error: 400 everywhere */
        SYNTAX,
        /** chunked content: 400 where the front end parses it, 413 where it is refused unread */
        CHUNKED,
        /** head too large or too many fields: 414/431, the library's bodiless 400 on Undertow */
        HEAD
    }

    static Stream<Arguments> hostileRequests() {
        StringBuilder manyFields = new StringBuilder();
        for (int i = 0; i < Limits.MAX_HEADERS + 50; i++) manyFields.append("X-F").append(i).append(": 1\r\n");
        StringBuilder bigFields = new StringBuilder();
        for (int i = 0; i < 40; i++) bigFields.append("X-B").append(i).append(": ").append("v".repeat(1000)).append("\r\n");
        return FrontEnd.cross(new Object[][] {
            {"Content-Length with Transfer-Encoding (request smuggling, RFC 9112 6.3)",
                "POST /plaintext HTTP/1.1\r\n" + HOST + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Limit.SYNTAX, 400},
            {"control byte in a header value", "GET /plaintext HTTP/1.1\r\n" + HOST + "X-A: a\u0001b\r\n\r\n", Limit.SYNTAX, 400},
            {"NUL in the request target", "GET /plain\u0000text HTTP/1.1\r\n" + HOST + "\r\n", Limit.SYNTAX, 400},
            {"negative Content-Length", "GET /plaintext HTTP/1.1\r\n" + HOST + "Content-Length: -1\r\n\r\n", Limit.SYNTAX, 400},
            {"overflowing Content-Length", "GET /plaintext HTTP/1.1\r\n" + HOST + "Content-Length: 99999999999999999999\r\n\r\n",
                Limit.SYNTAX, 400},
            {"conflicting Content-Length", "GET /plaintext HTTP/1.1\r\n" + HOST + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
                Limit.SYNTAX, 400},
            {"invalid chunk size", "GET /plaintext HTTP/1.1\r\n" + HOST + "Transfer-Encoding: chunked\r\n\r\nzz\r\n\r\n", Limit.CHUNKED, 400},
            {"request line of 40 KiB", "GET /" + "a".repeat(40 * 1024) + " HTTP/1.1\r\n" + HOST + "\r\n", Limit.HEAD, 414},
            {"40 KiB of header fields", "GET /plaintext HTTP/1.1\r\n" + HOST + bigFields + "\r\n", Limit.HEAD, 431},
            {(Limits.MAX_HEADERS + 50) + " header fields", "GET /plaintext HTTP/1.1\r\n" + HOST + manyFields + "\r\n", Limit.HEAD, 431},
            {"1 MB of declared content", "POST /plaintext HTTP/1.1\r\n" + HOST + "Content-Length: 1000000\r\n\r\n", Limit.SYNTAX, 413}});
    }

    /** The answer the contract asks for, or the one a front end's deviation allows instead. */
    private static int expectedStatus(FrontEnd fe, Limit limit, int status) {
        if (limit == Limit.CHUNKED && fe.has(Deviation.CHUNKED_CONTENT_REFUSED_UNREAD)) return 413;
        if (limit == Limit.HEAD && fe.has(Deviation.PARSE_ERRORS_BODILESS_400)) return 400;
        return status;
    }

    @ParameterizedTest(name = "{0} {1} -> {3}")
    @MethodSource("hostileRequests")
    void hostileRequestIsRejectedThenClosed(FrontEnd fe, String what, String request, Limit limit, int status) {
        ServerProcess s = SERVERS.get(fe);
        int expected = expectedStatus(fe, limit, status);
        try (RawConnection c = RawConnection.open(s)) {
            RawResponse r = c.exchange(request);
            assertEquals(expected, r.status, () -> fe.id + " answered " + what + " with\n" + r);
            assertNull(c.closedByServer(), "the connection must be closed after an error response");
        }
        assertServesPromptly(s);
    }

    /**
     * Slowloris: a request head that never ends, a field every 250 ms. The server must end the
     * connection after about {@value #HEADER_TIMEOUT_MS} ms (the bound here is generous), with 408
     * unless its library closes silently.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void slowRequestHeadIsTimedOut(FrontEnd fe) throws Exception {
        ServerProcess s = SERVERS.get(fe);
        long bound = HEADER_TIMEOUT_MS + 6_000;
        String answer;
        long took;
        try (Socket socket = connect(s)) {
            // A reader takes the server's bytes as they come, so a 408 is read before any reset.
            CompletableFuture<String> received = CompletableFuture.supplyAsync(() -> readUntilClosed(socket));
            OutputStream out = socket.getOutputStream();
            long start = System.nanoTime();
            out.write(("GET /plaintext HTTP/1.1\r\n" + HOST).getBytes(StandardCharsets.US_ASCII));
            for (int field = 0; !received.isDone() && millisSince(start) < bound; field++) {
                Thread.sleep(250);
                try {
                    out.write(("X-Slow-" + field + ": 1\r\n").getBytes(StandardCharsets.US_ASCII));
                } catch (IOException e) {
                    break; // reset: the server has closed
                }
            }
            answer = received.get(RawConnection.READ_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            took = millisSince(start);
        }
        long tookMs = took;
        assertTrue(tookMs < bound, () -> fe.id + " kept a never-ending request head open for " + tookMs + " ms (--header-timeout "
            + HEADER_TIMEOUT_MS + ")");
        if (fe.has(Deviation.HEADER_TIMEOUT_CLOSES_SILENTLY)) {
            assertEquals("", answer, () -> fe.id + " answered a timed-out head with " + answer);
        } else {
            assertTrue(answer.startsWith(Contract.statusLine(408)), () -> fe.id + " answered a timed-out head with '" + answer + "'");
        }
        assertServesPromptly(s);
    }

    /** A keep-alive connection left idle is closed after about {@value #IDLE_TIMEOUT_MS} ms. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void idleKeepAliveConnectionIsClosed(FrontEnd fe) throws IOException {
        ServerProcess s = SERVERS.get(fe);
        long bound = IDLE_TIMEOUT_MS + 6_000;
        try (RawConnection c = RawConnection.open(s)) {
            assertEquals("Hello, World!", c.exchange(RawConnection.get("/plaintext")).bodyText());
            long start = System.nanoTime();
            assertNull(c.closedByServer(), fe.id + " did not close an idle connection (--idle-timeout " + IDLE_TIMEOUT_MS + ")");
            long took = millisSince(start);
            assertTrue(took < bound, () -> fe.id + " closed the idle connection only after " + took + " ms");
            assertTrue(took >= IDLE_TIMEOUT_MS / 2, () -> fe.id + " closed a keep-alive connection after " + took + " ms, before the idle timeout");
        }
        assertServesPromptly(s);
    }

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    /** Opens a socket to {@code s} with a read timeout of {@link RawConnection#READ_TIMEOUT_MS}. */
    static Socket connect(ServerProcess s) throws IOException {
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress(ServerProcess.BIND, s.port), 5_000);
        socket.setSoTimeout(RawConnection.READ_TIMEOUT_MS);
        return socket;
    }

    /**
     * Reads until the server closes (or resets) the connection.
     *
     * @return what it sent, ISO-8859-1 ("" if nothing)
     * @throws AssertionError if it neither closes nor resets within the socket's read timeout
     */
    private static String readUntilClosed(Socket socket) {
        java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
        try {
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[1024];
            for (int n; (n = in.read(buf)) >= 0; ) got.write(buf, 0, n);
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server neither answered nor closed within " + RawConnection.READ_TIMEOUT_MS + " ms", e);
        } catch (SocketException e) {
            // reset or closed locally: what arrived before is the answer
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return got.toString(StandardCharsets.ISO_8859_1);
    }

    static long millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    /**
     * The check after every case: a new connection gets {@code /plaintext} answered within
     * {@value #SERVE_WITHIN_MS} ms.
     */
    static void assertServesPromptly(ServerProcess s) {
        long start = System.nanoTime();
        try (RawConnection c = RawConnection.open(s, SERVE_WITHIN_MS)) {
            RawResponse r = c.exchange(RawConnection.get("/plaintext"));
            assertEquals("Hello, World!", r.bodyText(), () -> s.frontEnd.id + " after the case: " + r);
        }
        long took = millisSince(start);
        assertTrue(took <= SERVE_WITHIN_MS, () -> s.frontEnd.id + " took " + took + " ms to answer a normal request after the case");
    }

    /** Collects lines of the server log that contain {@code text}. */
    static List<String> logLines(ServerProcess s, String text) {
        List<String> lines = new ArrayList<>();
        for (String line : s.logText().split("\n")) {
            if (line.contains(text)) lines.add(line);
        }
        return lines;
    }
}

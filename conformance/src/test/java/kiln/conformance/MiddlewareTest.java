package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The middleware kiln ships, turned on by the demo's flags, on every front end: it runs in the one
 * pipeline, so a preflight, a 404, a thrown 400 and a 401 go through it wherever the request was
 * parsed. {@code --cors} (a preflight on any path answered per the Fetch standard, the header on
 * every answer to the origin), {@code --access-log} (a combined-format line per request, with its
 * {@code X-Request-Id}), {@code --auth-tokens} (401 with {@code WWW-Authenticate} on /metrics).
 */
class MiddlewareTest {
    private static final String ORIGIN = "https://app.example";
    private static final String TOKEN = "conformance-token-0123456789";
    private static final Path DIR = tempDir();
    private static final Path ACCESS_LOG = DIR.resolve("access.log");
    private static final AtomicInteger IDS = new AtomicInteger();

    @RegisterExtension
    static final Servers SERVERS = new Servers("MiddlewareTest", "--cors", ORIGIN, "--access-log", ACCESS_LOG.toString(),
        "--auth-tokens", tokens().toString(), "--auth-paths", "/metrics");

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    private static Path tempDir() {
        try {
            return Files.createTempDirectory(Dirs.data(), "middleware-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path tokens() {
        try {
            return Files.writeString(DIR.resolve("tokens"), "# the conformance suite's\n" + TOKEN + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static RawResponse send(FrontEnd fe, String method, String target, String... headers) {
        StringBuilder request = new StringBuilder(method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (int i = 0; i < headers.length; i += 2) request.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send(request.append("\r\n").toString());
            return c.peek(12).endsWith("204") ? c.readHeadOnly() : c.read();  // a 204 has no Content-Length
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aCorsPreflightOnAnyPathIsAnsweredPerTheFetchStandard(FrontEnd fe) {
        for (String path : List.of("/updates", "/no/such/path")) {
            RawResponse r = send(fe, "OPTIONS", path, "Origin", ORIGIN, "Access-Control-Request-Method", "GET",
                "Access-Control-Request-Headers", "last-event-id");
            assertEquals(204, r.status, path + ": " + r.head);
            assertEquals(ORIGIN, r.header("Access-Control-Allow-Origin"), r.head);
            assertTrue(r.header("Access-Control-Allow-Methods").contains("GET"), r.head);
            assertEquals("last-event-id", r.header("Access-Control-Allow-Headers"), r.head);
            assertTrue(r.header("Vary").contains("Origin"), r.head);
        }
        RawResponse foreign = send(fe, "OPTIONS", "/updates", "Origin", "https://evil.example", "Access-Control-Request-Method", "GET");
        assertEquals(403, foreign.status, foreign.head);
        assertNull(foreign.header("Access-Control-Allow-Origin"), foreign.head);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void everyAnswerToTheOriginCarriesItsHeaderErrorsIncluded(FrontEnd fe) {
        for (String target : List.of("/plaintext", "/no/such/path", "/hello?delay=abc", "/metrics")) {
            RawResponse r = send(fe, "GET", target, "Origin", ORIGIN);
            assertEquals(ORIGIN, r.header("Access-Control-Allow-Origin"), target + ": " + r.head);
            assertEquals("Origin", r.header("Vary"), r.head);
        }
        assertNull(send(fe, "GET", "/plaintext").header("Access-Control-Allow-Origin"), "not cross-origin: no CORS header");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void authenticationRefusesWith401AndAChallenge(FrontEnd fe) {
        RawResponse none = send(fe, "GET", "/metrics");
        assertEquals(401, none.status, none.head);
        assertEquals("Bearer realm=\"kiln\"", none.header("WWW-Authenticate"), none.head);
        RawResponse wrong = send(fe, "GET", "/metrics", "Authorization", "Bearer wrong-token-0123456789");
        assertEquals(401, wrong.status, wrong.head);
        assertTrue(wrong.header("WWW-Authenticate").contains("error=\"invalid_token\""), wrong.head);
        assertEquals(200, send(fe, "GET", "/metrics", "Authorization", "Bearer " + TOKEN).status);
        assertEquals(200, send(fe, "GET", "/plaintext").status, "only the --auth-paths are protected");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void theAccessLogHasALinePerRequestIncluding404And400(FrontEnd fe) throws Exception {
        String run = fe.id + "-" + IDS.incrementAndGet();
        String[][] cases = {{"/plaintext", "200"}, {"/no/such/path", "404"}, {"/hello?delay=abc", "400"}, {"/metrics", "401"}};
        for (int i = 0; i < cases.length; i++) {
            RawResponse r = send(fe, "GET", cases[i][0], "X-Request-Id", run + "-" + i, "User-Agent", "kiln-conformance");
            assertEquals(run + "-" + i, r.header("X-Request-Id"), "the request id is echoed: " + r.head);
        }
        String made = send(fe, "GET", "/plaintext").header("X-Request-Id");
        assertTrue(made != null && made.matches("[0-9a-f]{8}-[0-9a-f]+"), "an id is made when none is sent: " + made);
        for (int i = 0; i < cases.length; i++) {
            String id = "\"" + run + "-" + i + "\"";
            String line = awaitLine(id);
            String expected = "\"GET " + cases[i][0] + " HTTP/1.1\" " + cases[i][1] + " ";
            assertTrue(line.startsWith("127.0.0.1 - - [") && line.contains(expected) && line.endsWith("\"kiln-conformance\" " + id),
                "combined log format with the request id, expected " + expected + " in: " + line);
        }
    }

    /** @return the access log's line containing {@code needle}, waiting up to 5 s (the log is written by its own thread) */
    private static String awaitLine(String needle) throws Exception {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
            List<String> found = Files.exists(ACCESS_LOG)
                ? Files.readAllLines(ACCESS_LOG).stream().filter(l -> l.contains(needle)).collect(Collectors.toList())
                : List.of();
            if (found.size() == 1) return found.get(0);
            if (found.size() > 1) throw new AssertionError("more than one line for " + needle + ": " + found);
            if (System.nanoTime() > deadline) throw new AssertionError("no access log line for " + needle + " in " + ACCESS_LOG);
            Thread.sleep(50);
        }
    }
}

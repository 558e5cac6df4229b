package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

import kiln.http.Response;
import kiln.http.ServerSentEvents;
import kiln.server.ServerLimits;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A streamed response on Kilim fibers: keep-alive comments after the body's silence limit, and a live
 * stream outlasting the idle timeout (which governs idle connections, not streams); a body that
 * fails midway is cut (no last chunk) and the connection closed.
 */
@Timeout(60)
class StreamsTest {
    /** Reads what arrives within {@code ms}, ISO-8859-1; stops early at end of stream. */
    private static String readFor(Socket s, long ms) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        long deadline = System.currentTimeMillis() + ms;
        byte[] buf = new byte[4096];
        while (System.currentTimeMillis() < deadline) {
            s.setSoTimeout((int) Math.max(1, deadline - System.currentTimeMillis()));
            try {
                int n = in.read(buf);
                if (n < 0) break;
                got.write(buf, 0, n);
            } catch (SocketTimeoutException e) {
                break;
            }
        }
        return got.toString(StandardCharsets.ISO_8859_1);
    }

    private static Socket open(KilimServer server, String target) throws IOException {
        Socket s = new Socket("127.0.0.1", server.port());
        s.getOutputStream().write(("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        return s;
    }

    @Test
    void aSilentStreamSendsKeepAlivesAndOutlivesTheIdleTimeout() throws Exception {
        CompletableFuture<Void> never = new CompletableFuture<>();
        KilimServer server = new KilimServer("127.0.0.1", 0, 1, new Router()
            .get("/quiet", req -> ServerSentEvents.response(events -> never, 300)))
            .limits(ServerLimits.defaults().idleTimeout(200));
        server.start();
        try (Socket s = open(server, "/quiet")) {
            String got = readFor(s, 2500);
            assertTrue(got.contains("Transfer-Encoding: chunked\r\n"), got);
            int keepAlives = got.split(": keep-alive\n\n", -1).length - 1;
            assertTrue(keepAlives >= 2, keepAlives + " keep-alive comments in 2.5 s (one per 300 ms of silence, checked once a second), idle timeout 200 ms: " + got);
            assertTrue(!got.contains("0\r\n\r\n"), "the stream was not ended: " + got);
        } finally {
            server.stop(1_000);
        }
    }

    @Test
    void aBodyThatFailsMidwayIsCutWithoutItsLastChunk() throws Exception {
        CompletableFuture<Void> later = new CompletableFuture<>();
        int[] polls = {0};
        KilimServer server = new KilimServer("127.0.0.1", 0, 1, new Router()
            .get("/fails", req -> Response.stream(200, "text/plain", out -> {
                if (polls[0]++ == 0) {
                    out.write("first part\n");
                    return later;
                }
                throw new IllegalStateException("broken on purpose");
            })));
        server.start();
        try (Socket s = open(server, "/fails")) {
            assertTrue(readFor(s, 500).endsWith("b\r\nfirst part\n\r\n"), "the first part, as one chunk");
            later.complete(null);
            String rest = readFor(s, 5_000);
            assertEquals("", rest, "closed without the last chunk: the client can tell the body was cut");
        } finally {
            server.stop(1_000);
        }
    }
}

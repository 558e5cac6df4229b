package kiln.undertow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Response;
import kiln.http.StreamEnd;
import kiln.server.Metrics;
import kiln.server.ModeOptions;
import kiln.server.ServerOptions;
import kiln.server.Step;
import kiln.server.StepRouter;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A waiting stream's client is watched ({@link ClientWatch}) in both modes: one that closes its
 * connection, or sends a byte, ends the stream at once as the client's; a stream that ends by
 * itself leaves the connection to the next request (Undertow's read listener is back).
 */
@Timeout(60)
class ClientWatchTest {
    private final BlockingQueue<String> ended = new LinkedBlockingQueue<>();
    private final CompletableFuture<Void> release = new CompletableFuture<>();

    /** GET /wait: "hello", then waits for {@link #release} (the heartbeat is 15 s away) and ends; GET /plain: "plain". */
    private StepRouter routes() {
        return new StepRouter(Metrics.off())
            .steps("GET", "/wait", request -> Step.of(Response.stream(200, "text/plain", new BodyStream() {
                private boolean greeted;

                @Override
                public CompletableFuture<?> poll(BodyOutput out) {
                    if (!greeted) {
                        greeted = true;
                        out.write("hello\n");
                    }
                    return release.isDone() ? null : release;
                }

                @Override
                public void ended(String reason) {
                    ended.add(reason);
                }
            })))
            .steps("GET", "/plain", request -> Step.of(Response.of(200, "text/plain", "plain".getBytes(StandardCharsets.US_ASCII))));
    }

    private interface Client {
        void run(Socket waiting) throws Exception;
    }

    /** Starts Undertow in {@code mode}, subscribes to /wait, and runs {@code client} once "hello" arrived. */
    private void waiting(ModeOptions.Mode mode, Client client) throws Exception {
        UndertowServer server = new UndertowServer(ServerOptions.of("--port", "0", "--bind", "127.0.0.1"), mode, 1, routes());
        server.start();
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write("GET /wait HTTP/1.1\r\nHost: h\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            String head = readUntil(s, "hello\n");
            assertTrue(head.contains("hello\n"), head);
            Thread.sleep(100);  // the stream waits
            client.run(s);
        } finally {
            server.stop(1_000);
        }
    }

    /** @return what arrived until {@code end} did (included), or until the connection ended */
    private static String readUntil(Socket s, String end) throws IOException {
        StringBuilder text = new StringBuilder();
        InputStream in = s.getInputStream();
        byte[] b = new byte[4096];
        while (text.indexOf(end) < 0) {
            int n;
            try {
                n = in.read(b);
            } catch (java.net.SocketException e) {
                break;  // a reset: the server closed with our byte unread
            }
            if (n < 0) break;
            text.append(new String(b, 0, n, StandardCharsets.ISO_8859_1));
        }
        return text.toString();
    }

    @ParameterizedTest
    @EnumSource(names = {"ASYNC", "BLOCKING"})
    void aClientThatClosesEndsItsWaitingStreamAtOnce(ModeOptions.Mode mode) throws Exception {
        waiting(mode, s -> {
            s.close();
            assertEquals(StreamEnd.CLIENT, ended.poll(2, TimeUnit.SECONDS));
        });
    }

    @ParameterizedTest
    @EnumSource(names = {"ASYNC", "BLOCKING"})
    void aClientThatSendsAByteEndsItsWaitingStreamWithoutTheLastChunk(ModeOptions.Mode mode) throws Exception {
        waiting(mode, s -> {
            s.getOutputStream().write('x');
            assertEquals(StreamEnd.CLIENT, ended.poll(2, TimeUnit.SECONDS));
            String rest = readUntil(s, "0\r\n\r\n");
            assertFalse(rest.contains("0\r\n\r\n"), "a cut body: " + rest);
        });
    }

    @ParameterizedTest
    @EnumSource(names = {"ASYNC", "BLOCKING"})
    void aStreamThatEndsByItselfLeavesItsConnectionToTheNextRequest(ModeOptions.Mode mode) throws Exception {
        waiting(mode, s -> {
            release.complete(null);
            assertTrue(readUntil(s, "0\r\n\r\n").endsWith("0\r\n\r\n"), "the last chunk");
            assertEquals(StreamEnd.COMPLETE, ended.poll(2, TimeUnit.SECONDS));
            s.getOutputStream().write("GET /plain HTTP/1.1\r\nHost: h\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            String next = readUntil(s, "plain");
            assertTrue(next.startsWith("HTTP/1.1 200") && next.endsWith("plain"), next);
        });
    }
}

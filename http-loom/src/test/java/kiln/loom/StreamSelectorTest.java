package kiln.loom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Response;
import kiln.http.StreamEnd;
import kiln.http.spi.Connection;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A waiting stream's socket is watched ({@link StreamSelector}): its client's leaving, or junk that
 * fills the connection's first KiB, ends it at once as the client's; a request pipelined after
 * the stream waits for it; and a stream that waits hundreds of times in a row is watched at each.
 */
@Timeout(60)
class StreamSelectorTest {
    private LoomServer server;

    @AfterEach
    void stop() {
        if (server != null) server.stop(1_000);
    }

    /** A body that waits for a future the test never completes (the heartbeat is 15 s away), and says why it ended. */
    static final class Waiting implements BodyStream {
        final CompletableFuture<String> ended = new CompletableFuture<>();
        private final CompletableFuture<Void> never = new CompletableFuture<>();
        private boolean opened;

        @Override
        public CompletableFuture<?> poll(BodyOutput out) {
            if (!opened) out.write("open\n");
            opened = true;
            return never;
        }

        @Override
        public void ended(String reason) {
            ended.complete(reason);
        }
    }

    private Waiting serveOne() throws IOException {
        Waiting body = new Waiting();
        server = new LoomServer("127.0.0.1", 0, new Router().get("/waits", req -> Response.stream(200, "text/plain", body))
            .get("/hello", req -> Response.text("hello")));
        server.start();
        return body;
    }

    private Socket subscribe(String target, String expect) throws IOException {
        Socket s = new Socket("127.0.0.1", server.port());
        s.setSoTimeout(20_000);
        s.getOutputStream().write(("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        readUntil(s.getInputStream(), expect);
        return s;
    }

    private static String readUntil(InputStream in, String expect) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        while (!got.toString(StandardCharsets.ISO_8859_1).contains(expect)) {
            int b = in.read();
            if (b < 0) throw new AssertionError("closed before '" + expect + "': " + got.toString(StandardCharsets.ISO_8859_1));
            got.write(b);
        }
        return got.toString(StandardCharsets.ISO_8859_1);
    }

    /** Reads in blocks until {@code expect} has been read, keeping only a tail. @return false when the stream ended first */
    private static boolean skipUntil(InputStream in, String expect) throws IOException {
        byte[] block = new byte[64 * 1024];
        String tail = "";
        for (int n; (n = in.read(block)) > 0;) {
            tail = tail + new String(block, 0, n, StandardCharsets.ISO_8859_1);
            if (tail.contains(expect)) return true;
            tail = tail.substring(Math.max(0, tail.length() - expect.length()));
        }
        return false;
    }

    private static long endsWithinMs(Waiting body, String reason) throws Exception {
        long start = System.nanoTime();
        assertEquals(reason, body.ended.get(5, TimeUnit.SECONDS));
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    @Test
    void aWaitingStreamEndsAsTheClientsWhenItsClientLeaves() throws Exception {
        Waiting body = serveOne();
        subscribe("/waits", "open\n").close();
        long ms = endsWithinMs(body, StreamEnd.CLIENT);
        assertTrue(ms < 1_000, "noticed after " + ms + " ms");
    }

    @Test
    void junkThatFillsTheFirstKibEndsAWaitingStreamAsTheClients() throws Exception {
        Waiting body = serveOne();
        try (Socket s = subscribe("/waits", "open\n")) {
            s.getOutputStream().write("x".repeat(2048).getBytes(StandardCharsets.US_ASCII));
            long ms = endsWithinMs(body, StreamEnd.CLIENT);
            assertTrue(ms < 1_000, "noticed after " + ms + " ms");
            assertTrue(closes(s.getInputStream()), "a cut stream closes its connection");
        }
    }

    /** @return true when the server closes the connection (a reset counts: it closed with junk unread) within the read timeout */
    private static boolean closes(InputStream in) {
        try {
            while (in.read() >= 0) {
                // what the stream had sent
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException reset) {
            return true;
        }
    }

    /**
     * A body of 300 parts, each 1 ms after the last: its stream waits 300 times, its socket
     * registered with the watch each time. A request pipelined meanwhile is kept, not refused,
     * and answered after the stream's last chunk.
     */
    @Test
    void aStreamThatWaitsManyTimesKeepsARequestPipelinedAfterIt() throws Exception {
        int parts = 300;
        server = new LoomServer("127.0.0.1", 0, new Router().get("/ticks", req -> Response.stream(200, "text/plain", new BodyStream() {
            private int sent;

            @Override
            public CompletableFuture<?> poll(BodyOutput out) {
                out.write("tick " + sent++ + "\n");
                if (sent == parts) return null;
                return CompletableFuture.runAsync(() -> { }, CompletableFuture.delayedExecutor(1, TimeUnit.MILLISECONDS));
            }
        })).get("/hello", req -> Response.text("hello")));
        server.start();
        try (Socket s = subscribe("/ticks", "tick 0\n")) {
            s.getOutputStream().write("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            String rest = readUntil(s.getInputStream(), "\r\n\r\nhello");
            assertTrue(rest.contains("tick " + (parts - 1) + "\n"), rest);
            assertTrue(rest.indexOf("\r\n0\r\n\r\n") < rest.indexOf("HTTP/1.1 200"), "the stream's last chunk, then the pipelined answer: " + rest);
        }
    }

    /**
     * After a report (the client sent a request pipelined after the stream) the channel is still
     * non-blocking, though no longer registered: {@link StreamSelector.Watched#blocking} must put it
     * back in blocking mode all the same, or the connection's next read returns 0 at once, again
     * and again (a stream that completes right after a report reads next).
     */
    @Test
    void afterAReportBlockingPutsTheChannelBackInBlockingMode() throws Exception {
        StreamSelector watch = new StreamSelector();
        try (ServerSocketChannel listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
             SocketChannel client = SocketChannel.open(listener.getLocalAddress());
             SocketChannel ch = listener.accept()) {
            Connection c = new Connection(new Connection.Owner() {
                @Override
                public long idleTimeoutNanos() {
                    return TimeUnit.MINUTES.toNanos(1);
                }

                @Override
                public long headerTimeoutNanos() {
                    return TimeUnit.MINUTES.toNanos(1);
                }

                @Override
                public boolean isStopping() {
                    return false;
                }
            }, ch);
            c.received("GET /waits HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            assertEquals(Connection.Action.HANDLE, c.next());
            c.respond(Response.stream(200, "text/plain", new Waiting()));
            while (c.next() == Connection.Action.WRITE) {  // the head, then the body's first part
                c.beginWrite();
                ByteBuffer out = c.output();
                while (out.hasRemaining()) ch.write(out);
                c.written();
            }
            assertEquals(Connection.Action.WAIT, c.next());
            CompletableFuture<Boolean> blockingAfter = CompletableFuture.supplyAsync(() -> {
                try {
                    StreamSelector.Watched w = watch.watch(c);
                    client.write(ByteBuffer.wrap("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
                    w.await();  // returns once the watch reported the bytes and they were read
                    assertEquals(Connection.Action.WAIT, c.next(), "the stream goes on; the request waits for it");
                    w.blocking();
                    return ch.isBlocking();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            assertTrue(blockingAfter.get(10, TimeUnit.SECONDS));
        } finally {
            watch.stop();
        }
    }

    /**
     * A client that does not read for a while fills its socket: the stream's write goes back to
     * blocking mode, and once the client reads again and the stream waits, its socket is watched
     * again: the client's leaving then ends it at once.
     */
    @Test
    void aStreamWhoseSocketFilledIsWatchedAgainAtItsNextWait() throws Exception {
        int parts = 160;
        byte[] part = "y".repeat(64 * 1024 - 1).concat("\n").getBytes(StandardCharsets.US_ASCII);
        CompletableFuture<String> ended = new CompletableFuture<>();
        CompletableFuture<Void> never = new CompletableFuture<>();
        server = new LoomServer("127.0.0.1", 0, new Router().get("/bulk", req -> Response.stream(200, "text/plain", new BodyStream() {
            private int sent;

            @Override
            public CompletableFuture<?> poll(BodyOutput out) {
                if (sent == parts) return never;
                out.write(part);
                if (++sent == parts) out.write("last\n");
                return CompletableFuture.runAsync(() -> { }, CompletableFuture.delayedExecutor(1, TimeUnit.MILLISECONDS));
            }

            @Override
            public void ended(String reason) {
                ended.complete(reason);
            }
        })));
        server.start();
        Socket s = new Socket();
        s.setReceiveBufferSize(4096);
        s.connect(new InetSocketAddress("127.0.0.1", server.port()));
        s.setSoTimeout(20_000);
        s.getOutputStream().write("GET /bulk HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        Thread.sleep(500);  // 10 MB to send, at most 4 MB of send buffer (Linux's tcp_wmem): the server's write waits
        assertEquals(false, ended.isDone());
        assertTrue(skipUntil(s.getInputStream(), "last\n"), "the stream's last part");
        Thread.sleep(100);  // the stream waits again, its socket watched
        s.close();
        long start = System.nanoTime();
        assertEquals(StreamEnd.CLIENT, ended.get(5, TimeUnit.SECONDS));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms < 1_000, "noticed after " + ms + " ms");
    }
}

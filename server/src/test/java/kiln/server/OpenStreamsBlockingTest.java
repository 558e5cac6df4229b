package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.StreamEnd;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The blocking stream loop (Jetty's blocking and loom modes, Undertow's blocking one), against a sink in memory. */
@Timeout(30)
class OpenStreamsBlockingTest {
    private final OpenStreams streams = new OpenStreams(null);

    /** Records the parts written; fails writes after {@code failAfter} parts with {@code failure}. */
    private static final class Recorder implements OpenStreams.BlockingSink {
        final List<String> parts = new CopyOnWriteArrayList<>();
        volatile boolean ended;
        int failAfter = Integer.MAX_VALUE;
        IOException failure;
        /** The watch's calls, in order, with the end's: "watch", "stop", "end". */
        final List<String> calls = new CopyOnWriteArrayList<>();
        volatile Runnable left;

        @Override
        public void watchClient(Runnable left) {
            calls.add("watch");
            this.left = left;
        }

        @Override
        public void stopWatching() {
            calls.add("stop");
        }

        @Override
        public void part(byte[] bytes, int length) throws IOException {
            if (parts.size() >= failAfter) throw failure;
            if (length > 0) parts.add(new String(bytes, 0, length, StandardCharsets.UTF_8));
        }

        @Override
        public void end() {
            calls.add("end");
            ended = true;
        }

        @Override
        public void cut() {
            throw new AssertionError("no deadlines here");
        }
    }

    /** A future that counts the callbacks registered on it. */
    private static final class CountingFuture extends CompletableFuture<Void> {
        final AtomicInteger registrations = new AtomicInteger();

        @Override
        public CompletableFuture<Void> whenComplete(BiConsumer<? super Void, ? super Throwable> action) {
            registrations.incrementAndGet();
            return super.whenComplete(action);
        }
    }

    /** A body that waits for {@code tick}, with a heartbeat every 50 ms of silence, then sends "tick" and ends. */
    private static BodyStream waitingFor(CountingFuture tick) {
        return new BodyStream() {
            @Override
            public CompletableFuture<?> poll(BodyOutput out) {
                if (!tick.isDone()) return tick;  // the same object while nothing changed
                out.write("tick\n");
                return null;
            }

            @Override
            public byte[] heartbeat() {
                return ": ka\n".getBytes(StandardCharsets.US_ASCII);
            }

            @Override
            public long heartbeatMillis() {
                return 50;
            }
        };
    }

    @Test
    void partsFollowTheirFuturesWithHeartbeatsBetweenAndTheBodyEnds() throws Exception {
        CountingFuture tick = new CountingFuture();
        Recorder sink = new Recorder();
        CompletableFuture<String> reason = CompletableFuture.supplyAsync(() -> streams.runBlocking(waitingFor(tick), sink, "GET /ticks"));
        Thread.sleep(300);  // six heartbeat intervals of silence
        tick.complete(null);
        assertEquals(StreamEnd.COMPLETE, reason.get());
        assertTrue(sink.ended, "the body's end was written");
        long heartbeats = sink.parts.stream().filter(": ka\n"::equals).count();
        assertTrue(heartbeats >= 3, sink.parts.toString());
        assertEquals("tick\n", sink.parts.get(sink.parts.size() - 1));
        assertEquals(1, tick.registrations.get(), "the future was waited on once, however many heartbeats passed");
    }

    @Test
    void aStopWakesTheWaitAndEndsTheBody() throws Exception {
        Recorder sink = new Recorder();
        CountingFuture tick = new CountingFuture();
        CompletableFuture<String> reason = CompletableFuture.supplyAsync(() -> streams.runBlocking(waitingFor(tick), sink, "GET /ticks"));
        while (tick.registrations.get() == 0) Thread.sleep(5);  // waiting
        streams.stop();
        assertEquals(StreamEnd.STOP, reason.get());
        assertTrue(sink.ended);
    }

    @Test
    void aClientThatLeavesWakesTheParkedThreadAndTheWatchStopsBeforeTheLoopReturns() throws Exception {
        Recorder sink = new Recorder();
        CountingFuture tick = new CountingFuture();
        CompletableFuture<String> reason = CompletableFuture.supplyAsync(() -> streams.runBlocking(waitingFor(tick), sink, "GET /ticks"));
        while (tick.registrations.get() == 0) Thread.sleep(5);  // waiting
        sink.left.run();
        assertEquals(StreamEnd.CLIENT, reason.get());
        assertEquals(List.of("watch", "stop"), sink.calls, "a cut body: no end written, the watch stopped");
    }

    @Test
    void theWatchStopsBeforeTheBodysEndIsWritten() throws Exception {
        CountingFuture tick = new CountingFuture();
        tick.complete(null);
        Recorder sink = new Recorder();
        assertEquals(StreamEnd.COMPLETE, streams.runBlocking(waitingFor(tick), sink, "GET /ticks"));
        assertEquals(List.of("watch", "stop", "end"), sink.calls);

        Recorder gone = new Recorder();
        gone.failAfter = 0;
        gone.failure = new IOException("Broken pipe");
        assertEquals(StreamEnd.CLIENT, streams.runBlocking(out -> { out.write("x"); return null; }, gone, "GET /x"));
        assertEquals(List.of("watch", "stop"), gone.calls, "stopped after a failed write too");
    }

    @Test
    void aFailedWriteIsTheClientsUnlessItTimedOutAndAFailingBodyIsAnError() throws Exception {
        Recorder gone = new Recorder();
        gone.failAfter = 0;
        gone.failure = new IOException("Broken pipe");
        assertEquals(StreamEnd.CLIENT, streams.runBlocking(out -> { out.write("x"); return null; }, gone, "GET /x"));

        Recorder stuck = new Recorder();
        stuck.failAfter = 0;
        stuck.failure = new IOException(new TimeoutException("Idle timeout expired: 1500/1500 ms"));
        assertEquals(StreamEnd.TIMEOUT, streams.runBlocking(out -> { out.write("x"); return null; }, stuck, "GET /x"));

        Recorder sink = new Recorder();
        assertEquals(StreamEnd.ERROR, streams.runBlocking(out -> { throw new IllegalStateException("broken on purpose"); }, sink, "GET /x"));
        assertTrue(!sink.ended, "a failed body is not ended as if complete");
    }
}

package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import kiln.http.StreamEnd;
import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The library front ends' streams: the asynchronous loop against a sink in memory, and each body ended exactly once. */
@Timeout(30)
class OpenStreamsTest {
    private final ExecutorService workers = Executors.newFixedThreadPool(2);
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final OpenStreams streams = new OpenStreams(null);
    /** Bodies of this test not ended yet: made by {@link #ticks}, ended by {@link BodyStream#ended}. */
    private final AtomicInteger open = new AtomicInteger();
    private final int before = 0;

    @AfterEach
    void stopThreads() {
        workers.shutdownNow();
        timer.shutdownNow();
    }

    /** Records the writes (completing each on another thread, as a library's IO thread would); fails after {@code failAfter} parts. */
    private static final class Recorder implements OpenStreams.AsyncSink {
        final List<String> parts = new CopyOnWriteArrayList<>();
        final AtomicInteger flushes = new AtomicInteger();
        final AtomicInteger finishes = new AtomicInteger();
        volatile Boolean complete;
        /** What {@link #watchClient} was given, and how many flushes (the head's) had completed then. */
        volatile Runnable left;
        volatile int flushesWhenWatched = -1;
        volatile int failAfter = Integer.MAX_VALUE;
        volatile Throwable failure;
        /** Parts after this many are never taken: a client that does not read, until {@link #cut}. */
        volatile int takeOnly = Integer.MAX_VALUE;
        private volatile Consumer<Throwable> hanging;

        @Override
        public void cut() {
            Consumer<Throwable> w = hanging;
            if (w != null) w.accept(new IOException("connection closed"));
        }

        @Override
        public void write(byte[] bytes, int length, Consumer<Throwable> written) {
            if (length > 0 && parts.size() >= takeOnly) {
                hanging = written;
                return;
            }
            CompletableFuture.runAsync(() -> {
                if (length == 0) {
                    flushes.incrementAndGet();
                    written.accept(null);
                } else if (parts.size() >= failAfter) {
                    written.accept(failure);
                } else {
                    parts.add(new String(bytes, 0, length, StandardCharsets.UTF_8));
                    written.accept(null);
                }
            });
        }

        @Override
        public void finish(boolean complete) {
            finishes.incrementAndGet();
            this.complete = complete;
        }

        @Override
        public void watchClient(Runnable left) {
            if (this.left != null) throw new AssertionError("watched twice");
            flushesWhenWatched = flushes.get();
            this.left = left;
        }
    }

    /** Writes "tick" each time {@code ticks} gives a new future; ends after {@code count} ticks. Counted in {@link #open} until ended. */
    private BodyStream ticks(List<CompletableFuture<Void>> ticks, long heartbeatMs) {
        AtomicInteger at = new AtomicInteger();
        AtomicInteger endings = new AtomicInteger();
        open.incrementAndGet();
        return new BodyStream() {
            @Override
            public void ended(String reason) {
                if (endings.incrementAndGet() > 1) throw new AssertionError("ended twice, the second time as " + reason);
                open.decrementAndGet();
            }

            @Override
            public CompletableFuture<?> poll(BodyOutput out) {
                int i = at.getAndIncrement();
                if (i > 0) out.write("tick" + i + "\n");
                return i < ticks.size() ? ticks.get(i) : null;
            }

            @Override
            public byte[] heartbeat() {
                return ":\n".getBytes(StandardCharsets.UTF_8);
            }

            @Override
            public long heartbeatMillis() {
                return heartbeatMs;
            }
        };
    }

    @Test
    void partsGoOutAsTheFuturesCompleteAndTheBodyIsEndedOnce() throws Exception {
        List<CompletableFuture<Void>> ticks = List.of(new CompletableFuture<>(), new CompletableFuture<>());
        Recorder sink = new Recorder();
        CompletableFuture<String> ended = streams.runAsync(ticks(ticks, 60_000), sink, "GET /ticks", workers, timer);
        Thread.sleep(100);
        assertEquals(before + 1, open.get());
        assertEquals(1, sink.flushes.get(), "the head went out before any part");
        assertTrue(sink.parts.isEmpty());
        ticks.get(0).complete(null);
        ticks.get(1).complete(null);
        assertEquals(StreamEnd.COMPLETE, ended.get(5, TimeUnit.SECONDS));
        assertEquals(List.of("tick1\n", "tick2\n"), sink.parts);
        assertEquals(Boolean.TRUE, sink.complete);
        assertEquals(1, sink.finishes.get());
        assertEquals(before, open.get());
    }

    @Test
    void aSilentStreamSendsHeartbeats() throws Exception {
        Recorder sink = new Recorder();
        CompletableFuture<String> ended = streams.runAsync(ticks(List.of(new CompletableFuture<>()), 50), sink, "GET /ticks", workers, timer);
        Thread.sleep(400);
        assertTrue(sink.parts.size() >= 3, "heartbeats every 50 ms: " + sink.parts);
        assertTrue(sink.parts.stream().allMatch(":\n"::equals));
        streams.stop();
        assertEquals(StreamEnd.STOP, ended.get(5, TimeUnit.SECONDS));
    }

    @Test
    void aStopEndsAWaitingStreamAtOnceWithItsLastChunk() throws Exception {
        Recorder sink = new Recorder();
        CompletableFuture<String> ended = streams.runAsync(ticks(List.of(new CompletableFuture<>()), 60_000), sink, "GET /ticks", workers, timer);
        Thread.sleep(100);
        streams.stop();
        assertEquals(StreamEnd.STOP, ended.get(2, TimeUnit.SECONDS));
        assertEquals(Boolean.TRUE, sink.complete);
        assertEquals(before, open.get());
        Recorder late = new Recorder();
        assertEquals(StreamEnd.STOP, streams.runAsync(ticks(List.of(new CompletableFuture<>()), 60_000), late, "GET /ticks", workers, timer)
            .get(2, TimeUnit.SECONDS), "a stream begun after the stop ends at once");
    }

    @Test
    void aFailedWriteCutsTheStreamAsClientOrTimeout() throws Exception {
        Recorder gone = new Recorder();
        gone.failAfter = 0;
        gone.failure = new IOException("broken pipe");
        List<CompletableFuture<Void>> done = List.of(CompletableFuture.completedFuture(null));
        assertEquals(StreamEnd.CLIENT, streams.runAsync(ticks(done, 60_000), gone, "GET /ticks", workers, timer).get(5, TimeUnit.SECONDS));
        assertEquals(Boolean.FALSE, gone.complete, "a cut body closes the connection without the last chunk");
        Recorder stuck = new Recorder();
        stuck.failAfter = 0;
        stuck.failure = new IOException(new TimeoutException("idle timeout"));
        assertEquals(StreamEnd.TIMEOUT, streams.runAsync(ticks(done, 60_000), stuck, "GET /ticks", workers, timer).get(5, TimeUnit.SECONDS));
        assertEquals(before, open.get());
    }

    @Test
    void aWriteTheClientDoesNotTakeIsCutAtItsDeadlineAsATimeout() throws Exception {
        ClientDeadlines deadlines = new ClientDeadlines(ServerLimits.defaults().rateGrace(100), false);
        OpenStreams timed = new OpenStreams(deadlines);
        Recorder stuck = new Recorder();
        stuck.takeOnly = 1;
        List<CompletableFuture<Void>> done = List.of(CompletableFuture.completedFuture(null), CompletableFuture.completedFuture(null));
        CompletableFuture<String> ended = timed.runAsync(ticks(done, 60_000), stuck, "GET /ticks", workers, timer);
        long waited = System.nanoTime();
        while (stuck.hanging == null) {
            assertTrue(System.nanoTime() - waited < TimeUnit.SECONDS.toNanos(5), "the second part's write never began");
            Thread.sleep(5);
        }
        deadlines.tick(System.nanoTime());
        assertTrue(!ended.isDone(), "within its grace period the write waits");
        deadlines.tick(System.nanoTime() + TimeUnit.SECONDS.toNanos(1));
        assertEquals(StreamEnd.TIMEOUT, ended.get(5, TimeUnit.SECONDS));
        assertEquals(Boolean.FALSE, stuck.complete, "a cut body: no last chunk");
        assertEquals(0, deadlines.size());
        assertEquals(before, open.get());
    }

    @Test
    void aClientThatLeavesWhileItsStreamWaitsEndsItAtOnceAsItsOwnWithoutTheLastChunk() throws Exception {
        Recorder sink = new Recorder();
        CompletableFuture<String> ended = streams.runAsync(ticks(List.of(new CompletableFuture<>()), 60_000), sink, "GET /ticks", workers, timer);
        long waited = System.nanoTime();
        while (sink.left == null) {
            assertTrue(System.nanoTime() - waited < TimeUnit.SECONDS.toNanos(5), "the client was never watched");
            Thread.sleep(5);
        }
        assertEquals(1, sink.flushesWhenWatched, "watched once the head went out");
        Thread.sleep(50);
        assertEquals(before + 1, open.get(), "waiting (no event, a heartbeat a minute away)");
        CompletableFuture.runAsync(sink.left);  // as a library's IO thread would
        assertEquals(StreamEnd.CLIENT, ended.get(2, TimeUnit.SECONDS));
        assertEquals(Boolean.FALSE, sink.complete, "a cut body: no last chunk");
        assertEquals(1, sink.finishes.get());
        assertEquals(before, open.get());
    }

    @Test
    void aThrowingBodyEndsAsErrorWithoutTheLastChunk() throws Exception {
        Recorder sink = new Recorder();
        String reason = streams.runAsync(out -> { throw new IllegalStateException("broken on purpose"); }, sink, "GET /x", workers, timer)
            .get(5, TimeUnit.SECONDS);
        assertEquals(StreamEnd.ERROR, reason);
        assertEquals(Boolean.FALSE, sink.complete);
    }

    @Test
    void theBlockingLoopEndsItsBodyAndIsStoppedHereToo() throws Exception {
        CompletableFuture<Void> never = new CompletableFuture<>();
        OpenStreams.BlockingSink discard = new OpenStreams.BlockingSink() {
            @Override
            public void part(byte[] bytes, int length) {
            }

            @Override
            public void cut() {
            }
        };
        CompletableFuture<String> ended = CompletableFuture.supplyAsync(() -> streams.runBlocking(ticks(List.of(never), 60_000), discard,
            "GET /ticks"), workers);
        Thread.sleep(100);
        assertEquals(before + 1, open.get());
        streams.stop();
        assertEquals(StreamEnd.STOP, ended.get(2, TimeUnit.SECONDS));
        assertEquals(before, open.get());
    }
}

package kiln.server;

import java.io.IOException;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;

/**
 * The streamed replies a library front end (Jetty, Undertow, Comsat) is sending: each counted in the
 * metrics exactly once ({@link Metrics#streamStarted}, then {@link Metrics#streamEnded} with its
 * reason), and all woken and ended by a server stop, so that a graceful stop does not wait its whole
 * grace period for streams that would never end by themselves. One per server.
 *
 * <p>Two ways to send a stream, by how the front end's thread may wait between parts:
 * {@link #runBlocking} parks the calling thread ({@link Streaming#runBlocking}), {@link #runAsync}
 * holds no thread: the body's future, a heartbeat timer or the stop continues the stream on an
 * executor, and every write is asynchronous ({@link AsyncSink}).
 */
public final class OpenStreams {
    private final Metrics metrics;
    /** The wake of each open stream's wait. */
    private final Set<Runnable> wakes = ConcurrentHashMap.newKeySet();
    private volatile boolean stopping;

    /** @param metrics where streams are counted ({@code http_streams_open}, {@code http_streams_ended_total}) */
    public OpenStreams(Metrics metrics) {
        this.metrics = metrics;
    }

    /** Where a blocking front end writes the parts of a streamed body, each flushed at once. */
    public interface BlockingSink {
        /** Writes one part and flushes it (the head too, before the first part), blocking. */
        void part(byte[] bytes, int length) throws IOException;

        /** Writes the end of the body (the last chunk); by default nothing: the front end's return ends it. */
        default void end() throws IOException {
        }
    }

    /**
     * Where an asynchronous front end writes the parts of a streamed body. At most one
     * {@link #write} is in progress at a time, and {@link #finish} is called once, after the last write
     * has completed.
     */
    public interface AsyncSink {
        /**
         * Starts writing one part and flushing it, without blocking; {@code length} 0 flushes only (the
         * head goes out at once that way).
         *
         * @param written called once, from any thread, with null when the bytes are written, or with
         *                the failure (the client left, or a write outlived the idle timeout)
         */
        void write(byte[] bytes, int length, Consumer<Throwable> written);

        /**
         * Ends the response.
         *
         * @param complete true: end the body properly (the last chunk); false: the body was cut
         *                 ({@link Streaming#cut}), close the connection without it
         */
        void finish(boolean complete);

        /** @return {@link Streaming#TIMEOUT} when a {@link java.util.concurrent.TimeoutException} is among the causes, else {@link Streaming#CLIENT} */
        default String writeFailed(Throwable failure) {
            for (Throwable t = failure; t != null; t = t.getCause()) {
                if (t instanceof java.util.concurrent.TimeoutException) return Streaming.TIMEOUT;
            }
            return Streaming.CLIENT;
        }
    }

    /**
     * Sends {@code body} on the calling thread, which parks between parts, counted from start to end.
     *
     * @param name names the stream in the log, e.g. {@code GET /updates/events}
     * @return why it ended ({@link Streaming}'s reasons); after a {@link Streaming#cut} reason the
     *         body is unfinished: close the connection
     */
    public String runBlocking(BodyStream body, BlockingSink sink, String name) {
        Counted counted = open();
        String reason = Streaming.CLIENT;
        try {
            reason = Streaming.runBlocking(body, new Streaming.Sink() {
                @Override
                public void part(byte[] bytes, int length) throws IOException {
                    sink.part(bytes, length);
                }

                @Override
                public void end() throws IOException {
                    sink.end();
                }

                @Override
                public boolean stopped() {
                    return stopping;
                }

                @Override
                public void whenStopped(Runnable wake) {
                    counted.whenStopped(wake);
                }
            }, name);
            return reason;
        } finally {
            counted.end(reason);
        }
    }

    /**
     * Sends {@code body} without holding a thread: polls it on {@code executor}, writes each part
     * through {@code sink}, and waits for the future it returned by a callback, with a heartbeat
     * ({@link BodyStream#heartbeat()}) from {@code timer} after {@link BodyStream#heartbeatMillis()}
     * of silence. Never blocks; returns at once.
     *
     * @param executor runs the body's {@link BodyStream#poll} and the writes' starts (a front end's
     *                 worker threads: never the thread that completed the body's future)
     * @param timer    schedules heartbeats
     * @return completes with why the stream ended, once {@code sink} is finished
     */
    public CompletableFuture<String> runAsync(BodyStream body, AsyncSink sink, String name, Executor executor,
                                              ScheduledExecutorService timer) {
        Pump pump = new Pump(body, sink, name, executor, timer, open());
        pump.start();
        return pump.ended;
    }

    /** Ends every open stream at its next step, and any begun later: call it before the server's graceful stop waits. */
    public void stop() {
        stopping = true;
        for (Runnable wake : wakes) wake.run();
    }

    /** @return true once {@link #stop} was called */
    public boolean stopped() {
        return stopping;
    }

    private Counted open() {
        metrics.streamStarted();
        return new Counted();
    }

    /** One stream's count: started when made, ended exactly once. */
    private final class Counted {
        private final AtomicBoolean ended = new AtomicBoolean();
        private volatile Runnable wake;

        void whenStopped(Runnable w) {
            wake = w;
            wakes.add(w);
            if (stopping) w.run();
        }

        void end(String reason) {
            if (!ended.compareAndSet(false, true)) return;
            Runnable w = wake;
            if (w != null) wakes.remove(w);
            metrics.streamEnded(reason);
        }
    }

    /**
     * The asynchronous loop: poll → write → wait (future | heartbeat | stop) → poll ..., as
     * {@link Streaming#runBlocking} does on a thread. {@code waiting} lets exactly one of the wait's
     * three wakers continue the stream.
     */
    private final class Pump {
        final CompletableFuture<String> ended = new CompletableFuture<>();
        private final BodyStream body;
        private final AsyncSink sink;
        private final String name;
        private final Executor executor;
        private final ScheduledExecutorService timer;
        private final Counted counted;
        private final AtomicBoolean waiting = new AtomicBoolean();
        private final AtomicBoolean finished = new AtomicBoolean();
        private final Runnable wake = this::wake;
        private volatile CompletableFuture<?> next;
        private CompletableFuture<?> armed;
        private volatile ScheduledFuture<?> heartbeat;

        Pump(BodyStream body, AsyncSink sink, String name, Executor executor, ScheduledExecutorService timer, Counted counted) {
            this.body = body;
            this.sink = sink;
            this.name = name;
            this.executor = executor;
            this.timer = timer;
            this.counted = counted;
        }

        void start() {
            counted.whenStopped(wake);
            // the head at once, before the body has anything to say
            sink.write(new byte[0], 0, failure -> continueOn(failure, this::poll));
        }

        private void poll() {
            if (stopping) {
                finish(Streaming.STOP);
                return;
            }
            BodyOutput part = new BodyOutput();
            CompletableFuture<?> after;
            try {
                after = body.poll(part);
            } catch (Exception | Error e) {
                finish(Streaming.failed(name, e));
                return;
            }
            next = after;
            if (part.length() == 0) {
                afterPart();
            } else {
                sink.write(part.array(), part.length(), failure -> continueOn(failure, this::afterPart));
            }
        }

        private void afterPart() {
            if (next == null) {
                finish(Streaming.COMPLETE);
            } else {
                await();
            }
        }

        private void await() {
            CompletableFuture<?> f = next;
            waiting.set(true);
            if (armed != f) {
                armed = f;  // once per future: a heartbeat's wait registers nothing new
                f.whenComplete((r, t) -> wake());
            }
            try {
                heartbeat = timer.schedule(this::beat, body.heartbeatMillis(), TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                waiting.set(false);
                finish(Streaming.STOP);
                return;
            }
            if (f.isDone() || stopping) wake();
        }

        /** The future completed or the server stops: poll again (which sees a stop). */
        private void wake() {
            if (!waiting.compareAndSet(true, false)) return;
            ScheduledFuture<?> h = heartbeat;
            if (h != null) h.cancel(false);
            run(this::poll);
        }

        /** Silence for the heartbeat interval: send the heartbeat, then wait again. */
        private void beat() {
            if (!waiting.compareAndSet(true, false)) return;
            run(() -> {
                byte[] bytes = body.heartbeat();
                if (stopping) {
                    finish(Streaming.STOP);
                } else if (bytes == null) {
                    await();
                } else {
                    sink.write(bytes, bytes.length, failure -> continueOn(failure, this::await));
                }
            });
        }

        /** After a write: the next step on the executor (a write's callback may run on a library's IO thread), or the end. */
        private void continueOn(Throwable failure, Runnable then) {
            if (failure != null) {
                finish(sink.writeFailed(failure));
            } else {
                run(then);
            }
        }

        /** Runs {@code step} on the executor; one that no longer takes tasks (the server stops) ends the stream. */
        private void run(Runnable step) {
            try {
                executor.execute(step);
            } catch (RejectedExecutionException e) {
                finish(Streaming.STOP);
            }
        }

        private void finish(String reason) {
            if (!finished.compareAndSet(false, true)) return;
            ScheduledFuture<?> h = heartbeat;
            if (h != null) h.cancel(false);
            try {
                sink.finish(!Streaming.cut(reason));
            } finally {
                counted.end(reason);
                ended.complete(reason);
            }
        }
    }
}

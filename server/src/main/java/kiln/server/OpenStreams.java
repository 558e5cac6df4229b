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
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.StreamEnd;
import kiln.http.spi.StreamedBody;

/**
 * The streamed responses a library front end (Jetty, Undertow, Comsat) is sending: each body ended
 * exactly once ({@link StreamedBody#end}, which tells the body, and so the router that counts it open:
 * {@link AbstractRouter.Exchange#respond}), and all woken and ended by a server stop, so that a
 * graceful stop does not wait its whole grace period for streams that would never end by
 * themselves. One per server.
 *
 * <p>Each stream is a {@link StreamedBody}, the same state machine kiln's own connections run; here
 * are the two loops around it, by how the front end's thread may wait between parts:
 * {@link #runBlocking} parks the calling thread, {@link #runAsync} holds no thread (the body's
 * future, a heartbeat timer or the stop continues the stream on an executor, and every write is
 * asynchronous, {@link AsyncSink}). Meanwhile the sink watches the stream's client
 * ({@link AsyncSink#watchClient}, {@link BlockingSink#watchClient}): one that leaves, or sends
 * anything, ends the stream at once as {@link StreamEnd#CLIENT}, not at a write minutes later.
 */
public final class OpenStreams {
    /**
     * The response buffer a servlet front end gives a streamed body ({@code setBufferSize}, before
     * its first write), bytes: the direct buffer Jetty (12 and 9.4) aggregates a response in, kept
     * by an open stream for as long as it is open. Jetty's default, 32 KB, let 7,900 subscribers fill
     * the direct memory of a 256 MB heap (OutOfMemoryError: the server exited); none at all (0) made
     * every part two writes through Jetty's callbacks, and the events of 10 commits a second to
     * 15,000 subscribers fell minutes behind. A part larger than this is written directly.
     */
    public static final int RESPONSE_BUFFER_BYTES = 4096;

    private final Set<StreamedBody> open = ConcurrentHashMap.newKeySet();
    /** Times each write: a client that does not read is cut ({@code --min-response-rate}); null for none. */
    private final ClientDeadlines deadlines;
    private volatile boolean stopping;

    /**
     * @param deadlines times each part's write: one that outlives its deadline (a client that does
     *                  not read) is cut ({@link BlockingSink#cut}, {@link AsyncSink#cut}) and the stream
     *                  ends as {@link StreamEnd#TIMEOUT}; null for no deadline
     */
    public OpenStreams(ClientDeadlines deadlines) {
        this.deadlines = deadlines;
    }

    /** Where a blocking front end writes the parts of a streamed body, each flushed at once. */
    public interface BlockingSink {
        /** Writes one part and flushes it (the head too, before the first part), blocking. */
        void part(byte[] bytes, int length) throws IOException;

        /** Writes the end of the body (the last chunk); by default nothing: the front end's return ends it. */
        default void end() throws IOException {
        }

        /**
         * The write under way outlived its deadline (a client that does not read): close the
         * connection, so that the write fails. From the reaper thread; must not block.
         */
        void cut();

        /**
         * @param failure what the failed write threw
         * @return why it failed: {@link StreamEnd#TIMEOUT} when a {@link java.util.concurrent.TimeoutException}
         *         is among the causes (as Jetty reports its idle timeout), else {@link StreamEnd#CLIENT}
         */
        default String writeFailed(Throwable failure) {
            return OpenStreams.writeFailed(failure);
        }

        /**
         * Starts watching the client while the stream runs, as {@link AsyncSink#watchClient} does;
         * called once, on the stream's thread, before its first part. {@link #stopWatching} ends the
         * watch. By default nothing: a client that left is noticed at the next write.
         *
         * @param left called at most once, from any thread (a library's IO thread: it must not
         *             block), when the client closed its connection or sent anything at all
         */
        default void watchClient(Runnable left) {
        }

        /**
         * Stops the watch {@link #watchClient} began, and returns once it no longer reads the
         * connection: called once, on the stream's thread, before {@link #end} and before
         * {@link #runBlocking} returns (its caller then ends the response, and the library reads the
         * connection again). By default nothing.
         */
        default void stopWatching() {
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
         * Ends the response; first stops the watch {@link #watchClient} began, if any: a watch
         * that still reads the connection as the response ends would take the next request's
         * bytes, or make the library close the connection.
         *
         * @param complete true: end the body properly (the last chunk); false: the body was cut
         *                 ({@link StreamEnd#cut}), close the connection without it
         */
        void finish(boolean complete);

        /**
         * Starts watching the client while the stream runs: none of the libraries reads a
         * connection while its request is handled, so without a watch a client that closed its
         * connection is noticed only at a later write, and one that sends junk never is. Called
         * once, after the head's write completed (so the request was read in full), before any
         * {@link #finish}. By default nothing.
         *
         * <p>The client leaves when it closes its side (end of stream, a reset) or sends any byte
         * at all: a stream's client has nothing to send, and bytes it sends are not handed back to
         * the library as a next (pipelined) request, which is not worth its risk here. A client
         * that half-closes and still reads is treated as gone, as nginx does.
         *
         * @param left called at most once, from any thread (a library's IO thread: it must not
         *             block), when the client left; the stream then ends as {@link StreamEnd#CLIENT},
         *             a cut body
         */
        default void watchClient(Runnable left) {
        }

        /**
         * The write under way outlived its deadline (a client that does not read): close the
         * connection, so that the write fails and its callback runs. From the reaper thread; must not block.
         */
        void cut();

        /** @return {@link StreamEnd#TIMEOUT} when a {@link java.util.concurrent.TimeoutException} is among the causes, else {@link StreamEnd#CLIENT} */
        default String writeFailed(Throwable failure) {
            return OpenStreams.writeFailed(failure);
        }
    }

    static String writeFailed(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof java.util.concurrent.TimeoutException) return StreamEnd.TIMEOUT;
        }
        return StreamEnd.CLIENT;
    }

    /**
     * Sends {@code body} on the calling thread, which parks between parts, and ends it.
     *
     * @param name names the stream in the log, e.g. {@code GET /updates/events}
     * @return why it ended ({@link StreamEnd}'s reasons); after a {@link StreamEnd#cut} reason the
     *         body is unfinished: close the connection
     */
    public String runBlocking(BodyStream body, BlockingSink sink, String name) {
        StreamedBody s = open(body, name);
        Thread thread = Thread.currentThread();
        Runnable unpark = () -> LockSupport.unpark(thread);
        ClientDeadlines.Wait writing = null;
        boolean watching = false;
        try {
            sink.watchClient(s::clientLeft);
            watching = true;
            while (true) {
                BodyOutput part = new BodyOutput();
                switch (s.next(part)) {
                    case PART -> {
                        writing = deadlines == null ? null : deadlines.write(part.length(), sink::cut);
                        sink.part(part.array(), part.length());
                        if (writing != null) writing.end();
                        writing = null;
                    }
                    case WAIT -> {
                        if (s.park(unpark)) LockSupport.parkNanos(s, Math.max(1, s.heartbeatAt() - System.nanoTime()));
                    }
                    case END -> {
                        watching = false;
                        sink.stopWatching();  // before the last chunk: the library reads the connection once the response ends
                        if (!StreamEnd.cut(s.reason())) sink.end();
                        return s.reason();
                    }
                }
            }
        } catch (IOException e) {
            s.end(writing != null && !writing.end() ? StreamEnd.TIMEOUT : sink.writeFailed(e));
            return s.reason();
        } finally {
            try {
                if (watching) sink.stopWatching();
            } finally {
                close(s);
            }
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
        Pump pump = new Pump(open(body, name), sink, executor, timer);
        pump.write(new byte[0], 0);  // the head at once, before the body has anything to say
        return pump.ended;
    }

    /** Ends every open stream at its next step, and any begun later: call it before the server's graceful stop waits. */
    public void stop() {
        stopping = true;
        for (StreamedBody s : open) s.stop();
    }

    /** @return true once {@link #stop} was called */
    public boolean stopped() {
        return stopping;
    }

    private StreamedBody open(BodyStream body, String name) {
        StreamedBody s = new StreamedBody(body, name);
        open.add(s);
        if (stopping) s.stop();
        return s;
    }

    private void close(StreamedBody s) {
        s.end(StreamEnd.ERROR);  // ERROR unless it ended already: a sink that threw something unexpected
        open.remove(s);
    }

    /**
     * For a front end that could not send a streamed response at all (its client left before the head
     * went out): ends its body, so that it is counted closed. Nothing for a response that is not streamed.
     */
    public static void notSent(kiln.http.Response response) {
        if (response.stream != null) response.stream.ended(StreamEnd.CLIENT);
    }

    /**
     * The asynchronous loop around one {@link StreamedBody}: next → write → next ..., and on
     * {@link StreamedBody.Next#WAIT} a park whose wake-up (the body's future, the stop, or the
     * heartbeat timer) continues it on the executor.
     */
    private final class Pump {
        final CompletableFuture<String> ended = new CompletableFuture<>();
        private final StreamedBody body;
        private final AsyncSink sink;
        private final Executor executor;
        private final ScheduledExecutorService timer;
        private final Runnable step = this::step;
        private final Runnable wake = () -> run(step);
        private final AtomicBoolean finished = new AtomicBoolean();
        private volatile ScheduledFuture<?> heartbeat;
        /** The deadline of the write under way, or null. */
        private volatile ClientDeadlines.Wait writing;
        /** The sink watches the client ({@link AsyncSink#watchClient}): from the first step, after the head went out. */
        private boolean watching;

        Pump(StreamedBody body, AsyncSink sink, Executor executor, ScheduledExecutorService timer) {
            this.body = body;
            this.sink = sink;
            this.executor = executor;
            this.timer = timer;
        }

        private void step() {
            if (!watching) {
                watching = true;
                sink.watchClient(body::clientLeft);
            }
            ScheduledFuture<?> h = heartbeat;
            if (h != null) h.cancel(false);
            BodyOutput part = new BodyOutput();
            switch (body.next(part)) {
                case PART -> write(part.array(), part.length());
                case WAIT -> {
                    if (!body.park(wake)) {
                        run(step);
                        return;
                    }
                    try {
                        heartbeat = timer.schedule(body::wake, Math.max(1, body.heartbeatAt() - System.nanoTime()), TimeUnit.NANOSECONDS);
                    } catch (RejectedExecutionException e) {
                        body.stop();  // the server stops
                    }
                }
                case END -> finish();
            }
        }

        /** Starts a write, timed by the deadlines. */
        void write(byte[] bytes, int length) {
            writing = deadlines == null ? null : deadlines.write(length, sink::cut);
            sink.write(bytes, length, this::afterWrite);
        }

        /** After a write (a library's IO thread may call it): the next step on the executor, or the end. */
        void afterWrite(Throwable failure) {
            ClientDeadlines.Wait w = writing;
            boolean cut = w != null && !w.end();
            if (failure != null) {
                body.end(cut ? StreamEnd.TIMEOUT : sink.writeFailed(failure));
                finish();
            } else {
                run(step);
            }
        }

        /** Runs {@code task} on the executor; one that no longer takes tasks (the server stops) ends the stream. */
        private void run(Runnable task) {
            try {
                executor.execute(task);
            } catch (RejectedExecutionException e) {
                body.end(StreamEnd.STOP);
                finish();
            }
        }

        private void finish() {
            if (!finished.compareAndSet(false, true)) return;
            try {
                sink.finish(!StreamEnd.cut(body.reason()));
            } finally {
                close(body);
                ended.complete(body.reason());
            }
        }
    }
}

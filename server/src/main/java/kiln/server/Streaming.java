package kiln.server;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;

/**
 * How a front end sends a streamed body ({@link BodyStream}, {@link kiln.http.Reply#stream}): poll it,
 * write the part, wait for the future it returned (or send a heartbeat after its silence limit),
 * until it completes, the client goes away, or the server stops. {@link #runBlocking} is that loop for
 * a thread that may block (a virtual thread, a blocking server's thread); Kilim's connection fiber
 * runs the same loop, pausing where this one parks, and {@link OpenStreams#runAsync} runs it in
 * callbacks for the library front ends whose threads must not block. The library front ends count
 * and stop their streams in one place, {@link OpenStreams}.
 *
 * <p>The reasons a stream ends are the {@code reason} label of {@code http_streams_ended_total}
 * ({@link Metrics#streamEnded}).
 */
public final class Streaming {
    private static final Logger LOG = Logger.getLogger(Streaming.class.getName());

    /** The body said it is complete ({@link BodyStream#poll} returned null). */
    public static final String COMPLETE = kiln.http.StreamEnd.COMPLETE;
    /** The client went away: a write failed. */
    public static final String CLIENT = kiln.http.StreamEnd.CLIENT;
    /** The client did not read: a write took longer than the idle timeout and was cut. */
    public static final String TIMEOUT = kiln.http.StreamEnd.TIMEOUT;
    /** The server stopped. */
    public static final String STOP = kiln.http.StreamEnd.STOP;
    /** The body threw; the connection closed without the last chunk, so the client sees a cut body. */
    public static final String ERROR = kiln.http.StreamEnd.ERROR;

    private Streaming() {
    }

    /** Where a blocking front end writes a streamed body. */
    public interface Sink {
        /** Writes one part (framed as the connection needs: a chunk) and flushes it, blocking. */
        void part(byte[] bytes, int length) throws IOException;

        /** Writes the end of the body (the last chunk) and flushes it. */
        void end() throws IOException;

        /** @return true once the server stops: the stream ends at its next step */
        boolean stopped();

        /** @param wake to run, from any thread, when the server stops: it wakes the stream's wait */
        void whenStopped(Runnable wake);

        /**
         * @param failure what the failed write threw
         * @return why it failed: {@link #TIMEOUT} when the server cut a write that took longer than
         *         its idle timeout (a client that does not read), else {@link #CLIENT} (the default
         *         tells them apart by a {@link java.util.concurrent.TimeoutException} among the causes,
         *         as Jetty reports its idle timeout)
         */
        default String writeFailed(IOException failure) {
            for (Throwable t = failure; t != null; t = t.getCause()) {
                if (t instanceof java.util.concurrent.TimeoutException) return TIMEOUT;
            }
            return CLIENT;
        }
    }

    /**
     * Sends {@code body} on the calling thread, which parks between parts, until it ends.
     *
     * @param name names the stream in the log, e.g. {@code GET /updates/events}
     * @return why it ended: {@link #COMPLETE}, {@link #CLIENT}, {@link #TIMEOUT}, {@link #STOP} or {@link #ERROR};
     *         after {@link #ERROR} (and a failed write) close the connection, the body was not finished
     */
    public static String runBlocking(BodyStream body, Sink sink, String name) {
        Waiter waiter = new Waiter();
        sink.whenStopped(waiter);
        try {
            CompletableFuture<?> armed = null;
            while (true) {
                BodyOutput part = new BodyOutput();
                CompletableFuture<?> next;
                try {
                    next = body.poll(part);
                } catch (Exception | Error e) {
                    return failed(name, e);
                }
                sink.part(part.array(), part.length());
                if (next == null) break;
                while (!next.isDone() && !sink.stopped()) {
                    if (armed != next) {
                        next.whenComplete(waiter);  // once per future: a heartbeat's wait registers nothing new
                        armed = next;
                    }
                    if (!waiter.await(body.heartbeatMillis()) && !next.isDone() && !sink.stopped()) {
                        byte[] heartbeat = body.heartbeat();
                        if (heartbeat != null) sink.part(heartbeat, heartbeat.length);
                    }
                }
                if (sink.stopped()) break;
            }
            sink.end();
            return sink.stopped() ? STOP : COMPLETE;
        } catch (IOException e) {
            return sink.writeFailed(e);
        } finally {
            waiter.thread = null;  // a future that completes later (a feed's shared one) must not keep this thread
        }
    }

    /**
     * @param reason why a stream ended, one of this class's reasons
     * @return true when its body was not finished ({@link #CLIENT}, {@link #TIMEOUT}, {@link #ERROR}):
     *         the connection must close without the last chunk ({@code Connection.abortStream})
     */
    public static boolean cut(String reason) {
        return kiln.http.StreamEnd.cut(reason);
    }

    /** Logs a body that threw. @return {@link #ERROR} */
    public static String failed(String name, Throwable e) {
        LOG.log(Level.WARNING, "the streamed body of " + name + " failed; closing its connection", e);
        return ERROR;
    }

    /** Parks the stream's thread until its future completes, the server stops, or a heartbeat is due. */
    private static final class Waiter implements Runnable, BiConsumer<Object, Throwable> {
        private volatile Thread thread = Thread.currentThread();
        private volatile boolean woken;

        @Override
        public void run() {
            woken = true;
            Thread t = thread;
            if (t != null) LockSupport.unpark(t);
        }

        @Override
        public void accept(Object result, Throwable failure) {
            run();
        }

        /** @return true when woken, false when {@code ms} passed first */
        boolean await(long ms) {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
            while (!woken) {
                long left = deadline - System.nanoTime();
                if (left <= 0) return false;
                LockSupport.parkNanos(this, left);
            }
            woken = false;
            return true;
        }
    }
}

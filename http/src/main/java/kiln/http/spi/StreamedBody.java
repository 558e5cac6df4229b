package kiln.http.spi;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Response;
import kiln.http.StreamEnd;

/**
 * A streamed response's body while it is sent ({@link Response#stream}): the one loop of every front end,
 * as a state machine that does no I/O. It polls the {@link BodyStream}, says when a part or a
 * heartbeat is to be written and when to wait, and why the body ended; the front end writes and
 * waits its own way:
 *
 * <pre>{@code
 * StreamedBody s = new StreamedBody(body, "GET /updates/events");
 * while (true) {
 *     BodyOutput part = new BodyOutput();
 *     switch (s.next(part)) {
 *         case PART -> write(part);                      // a failed write ends it: s.end(StreamEnd.CLIENT)
 *         case WAIT -> { if (s.park(wake)) wait until wake runs, or until s.heartbeatAt(); }
 *         case END  -> { finish the response, or cut it when StreamEnd.cut(s.reason()); return; }
 *     }
 * }
 * }</pre>
 *
 * The wait ends with the first of: the body's future completing, {@link #stop} (a server's stop,
 * from any thread), {@link #wake} (the front end's own: its client left, or the heartbeat is due).
 * Kiln's own HTTP layer runs it inside its {@link Connection}; the library front ends in
 * {@code kiln.server.OpenStreams}, on a parking thread or in callbacks.
 */
public final class StreamedBody implements BiConsumer<Object, Throwable> {
    private static final Logger LOG = Logger.getLogger(StreamedBody.class.getName());
    private static final VarHandle WAKE;

    static {
        try {
            WAKE = MethodHandles.lookup().findVarHandle(StreamedBody.class, "wake", Runnable.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** What the front end does next ({@link #next}). */
    public enum Next {
        /** Write the bytes appended (a part, or a heartbeat), then {@link #next} again. */
        PART,
        /** Wait: {@link #park}, then {@link #next} again once woken (or at {@link #heartbeatAt()}). */
        WAIT,
        /** The body ended, for {@link #reason()}. */
        END
    }

    /** The body; null once it ended, so that a registration on a shared future holds only this shell. */
    private BodyStream body;
    private final String name;
    /** Now, ns: {@link System#nanoTime}, or its connection's owner's clock. */
    private final LongSupplier clock;
    /**
     * {@link #clock}'s time of the last part or heartbeat, ns. {@link #heartbeatAt()} reads it (and
     * {@link #body}) on other threads without a fence: a stale value wakes the loop early, and it
     * parks again, or a second late.
     */
    private long lastSent;
    /** What the body last said to wait for; null before its first poll. */
    private CompletableFuture<?> waitingFor;
    /** Why the body ended, once it has ({@link Next#END}). */
    private String reason;
    /** The body said it is complete with a part still to write: {@link #reason} once it is written. */
    private boolean completeAfterPart;
    private volatile boolean stopped;
    /** Set by {@link #clientLeft}: the body ends as {@link StreamEnd#CLIENT} at its next step. */
    private volatile boolean clientLeft;
    /**
     * Polls in a row that wrote nothing and returned a completed future: the body asks to be polled
     * again at once without having anything to send. A few are a body's own steps (a read it started
     * was already done); this many is a busy loop (a merged future reused after it completed), and
     * the body is ended rather than spun.
     */
    static final int MAX_IDLE_POLLS = 1_000;
    private int idlePolls;
    /** The parked loop's wake-up ({@link #park}); whoever swaps it out runs it. */
    @SuppressWarnings("unused") private volatile Runnable wake;

    /**
     * @param body the body to send
     * @param name the route, e.g. {@code GET /updates/events}, for the log line of a body that throws
     */
    public StreamedBody(BodyStream body, String name) {
        this(body, name, System::nanoTime);
    }

    /**
     * @param body  the body to send
     * @param name  the route, for the log line of a body that throws
     * @param clock now, ns, on the clock the heartbeat is kept by (a connection's owner's)
     */
    public StreamedBody(BodyStream body, String name, LongSupplier clock) {
        this.body = body;
        this.name = name;
        this.clock = clock;
        this.lastSent = clock.getAsLong();
    }

    /** @return the route whose body this is, e.g. {@code GET /updates/events} */
    public String name() {
        return name;
    }

    /**
     * @param out where a part or a heartbeat is appended (empty, made for this call)
     * @return {@link Next#PART} when {@code out} has bytes to write, {@link Next#WAIT} to wait,
     *         {@link Next#END} when the body ended ({@link #reason()})
     */
    public Next next(BodyOutput out) {
        while (reason == null) {
            if (completeAfterPart) {
                reason = StreamEnd.COMPLETE;
                break;
            }
            if (clientLeft) {
                reason = StreamEnd.CLIENT;
                break;
            }
            if (stopped) {
                reason = StreamEnd.STOP;
                break;
            }
            if (waitingFor != null && !waitingFor.isDone()) {
                long now = clock.getAsLong();
                if (now - lastSent < heartbeatNanos(body)) return Next.WAIT;
                lastSent = now;
                byte[] heartbeat = body.heartbeat();
                if (heartbeat == null) return Next.WAIT;
                out.write(heartbeat);
                return Next.PART;
            }
            CompletableFuture<?> next;
            try {
                next = body.poll(out);
            } catch (Exception | Error e) {
                LOG.log(Level.WARNING, "the streamed body of " + name + " failed; closing its connection", e);
                reason = StreamEnd.ERROR;
                return Next.END;  // what it appended is not sent: the body is cut
            }
            if (next == null) {
                completeAfterPart = true;
            } else if (next != waitingFor) {
                waitingFor = next;
                next.whenComplete(this);  // once per future: a feed returns the same one until it changes
            }
            if (out.length() > 0) {
                lastSent = clock.getAsLong();
                idlePolls = 0;
                return Next.PART;
            }
            if (next != null && next.isDone() && ++idlePolls >= MAX_IDLE_POLLS) {
                LOG.warning("the streamed body of " + name + " returned a completed future " + MAX_IDLE_POLLS + " times in a row"
                    + " without writing anything: it would spin on its thread forever, so it is ended (return a future that"
                    + " completes when there is something to send)");
                reason = StreamEnd.ERROR;
                return Next.END;
            }
            if (next == null || !next.isDone()) idlePolls = 0;
        }
        return Next.END;
    }

    private static long heartbeatNanos(BodyStream body) {
        return TimeUnit.MILLISECONDS.toNanos(body.heartbeatMillis());
    }

    /** @return why the body ended, one of {@link StreamEnd}'s; null before {@link Next#END} */
    public String reason() {
        return reason;
    }

    /**
     * Ends the body: after {@link Next#END}, with its {@link #reason()}; from outside, when a write
     * failed ({@link StreamEnd#CLIENT}, {@link StreamEnd#TIMEOUT}) or the client left, even after the
     * body said it was complete (its last part was not written). The first call tells the body
     * ({@link BodyStream#ended}) and detaches it from the futures it waited on; later calls do nothing.
     */
    public void end(String why) {
        if (reason == null) reason = why;
        BodyStream b = body;
        if (b == null) return;
        body = null;
        waitingFor = null;
        wake = null;  // what a later completion of a shared future, or a late wake-up, could reach is dropped
        try {
            b.ended(reason);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "the streamed body of " + name + " failed as it ended", e);
        }
    }

    /** A future the body returned completed: {@link #wake()}. */
    @Override
    public void accept(Object result, Throwable failure) {
        wake();
    }

    /**
     * For {@link Next#WAIT}: the front end's {@code wake} runs once, from any thread, when there may
     * be work: the body's future completed, {@link #stop}, or {@link #wake()} (the front end's: at
     * {@link #heartbeatAt()}, or its client left).
     *
     * @return true when parked: wait until {@code wake} runs; false when there is work already: call
     *         {@link #next} at once ({@code wake} will not run)
     */
    public boolean park(Runnable wake) {
        long due = lastSent + heartbeatNanos(body);
        WAKE.setVolatile(this, wake);
        if (waitingFor.isDone() || stopped || clientLeft || clock.getAsLong() - due >= 0) {
            return !WAKE.compareAndSet(this, wake, null);  // a waker that swapped it out first runs it
        }
        return true;
    }

    /** @return the {@link #clock}'s time, ns, when a parked body's heartbeat is due (wake it then); 0 while not parked */
    public long heartbeatAt() {
        BodyStream b = body;  // null once ended, from any thread
        return wake == null || b == null ? 0 : lastSent + heartbeatNanos(b);
    }

    /** From any thread: runs the parked loop's wake-up, once; nothing when none is parked. */
    public void wake() {
        Runnable w = (Runnable) WAKE.getAndSet(this, null);
        if (w != null) w.run();
    }

    /**
     * From any thread, for a front end that watches a waiting stream's socket: the client closed its
     * side (or sent what a stream's client has no reason to send); the body ends at its next step as
     * {@link StreamEnd#CLIENT}, a cut body, and a parked loop is woken.
     */
    public void clientLeft() {
        clientLeft = true;
        wake();
    }

    /** For a server's stop, from any thread: the body ends at its next step ({@link StreamEnd#STOP}: a complete body). */
    public void stop() {
        stopped = true;
        wake();
    }
}

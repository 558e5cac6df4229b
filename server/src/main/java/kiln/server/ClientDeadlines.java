package kiln.server;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;

/**
 * The deadlines of a library front end's waits on its clients, where its library has none (Jetty
 * and Undertow time out neither a request's content that never comes nor a write to a client that
 * never reads, except by an idle timeout that a trickle of bytes resets or that does not run while
 * a request is handled): one {@link Reaper} thread, {@code kiln-reaper}, looks at every wait four
 * times a second and cuts those past their deadline. kiln's own HTTP layer keeps the same deadlines
 * in its connection state machine ({@link kiln.http.spi.Connection}).
 *
 * <ul>
 *   <li>{@link #content}: a request's content must arrive at {@code --min-request-rate} or faster;
 *       each byte buys 1/rate s, and the client may be at most {@code --min-rate-grace} behind, so a
 *       silent client is cut the grace period after its last byte (Kestrel's
 *       {@code MinRequestBodyDataRate}).</li>
 *   <li>{@link #write}: a write of N bytes must be done within the grace period plus N bytes at
 *       {@code --min-response-rate} (Kestrel's {@code MinResponseDataRate}), or the idle timeout when
 *       there is no minimum rate.</li>
 * </ul>
 * A cut runs the front end's action once, on the reaper thread: it must not block (it answers 408
 * and closes, or just closes the connection, which wakes a thread blocked on it).
 */
public final class ClientDeadlines {
    private static final Logger LOG = Logger.getLogger(ClientDeadlines.class.getName());
    /** How often the waits are looked at, ms: the deadlines' precision. */
    static final long TICK_MS = 250;

    private final Set<Wait> waits = ConcurrentHashMap.newKeySet();
    private final long requestRate;
    private final long responseRate;
    private final long graceNanos;
    private final long idleNanos;
    private final Reaper reaper;

    /** Starts the reaper thread; {@link #stop} it with the server. */
    public ClientDeadlines(ServerLimits limits) {
        this(limits, true);
    }

    ClientDeadlines(ServerLimits limits, boolean scheduled) {
        this.requestRate = limits.minRequestRate();
        this.responseRate = limits.minResponseRate();
        this.graceNanos = TimeUnit.MILLISECONDS.toNanos(limits.rateGraceMs());
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(limits.idleTimeoutMs());
        this.reaper = scheduled ? new Reaper(TICK_MS, () -> tick(System.nanoTime())) : null;
    }

    /** One wait on a client, cut once when its deadline passes unless {@link #end}ed first. */
    public final class Wait {
        private final Runnable cut;
        private final long rate;
        private final AtomicBoolean over = new AtomicBoolean();
        private volatile long deadline;

        private Wait(long deadline, long rate, Runnable cut) {
            this.deadline = deadline;
            this.rate = rate;
            this.cut = cut;
        }

        /** {@code bytes} more arrived: a content wait's deadline moves by bytes/rate, to at most the grace period from now. */
        public void received(long bytes) {
            if (rate <= 0 || bytes <= 0) return;
            long now = System.nanoTime();
            deadline = Math.min(now + graceNanos, deadline + bytes * 1_000_000_000L / rate);
        }

        /**
         * The wait is over: no cut from now on.
         *
         * @return false when it was cut already (the front end's action ran or runs now)
         */
        public boolean end() {
            waits.remove(this);
            return over.compareAndSet(false, true);
        }

        /** @return true once cut or ended */
        public boolean isOver() {
            return over.get();
        }

        private void expire() {
            if (!over.compareAndSet(false, true)) return;
            waits.remove(this);
            try {
                cut.run();
            } catch (RuntimeException e) {
                LOG.log(java.util.logging.Level.WARNING, "cutting a client past its deadline failed", e);
            }
        }
    }

    /**
     * Starts watching a request's content as it arrives: with no minimum rate (0), the header
     * timeout's role falls to the idle timeout from the last byte.
     *
     * @param cut what to do when the client falls too far behind: answer 408 and close; must not block
     * @return the wait: {@link Wait#received} for each read, {@link Wait#end} when all of it is in
     */
    public Wait content(Runnable cut) {
        Wait w = requestRate > 0 ? new Wait(System.nanoTime() + graceNanos, requestRate, cut) : new Wait(System.nanoTime() + idleNanos, 0, cut);
        waits.add(w);
        return w;
    }

    /**
     * Starts watching a write of {@code bytes} to a client.
     *
     * @param cut what to do when the write outlives its deadline: close the connection (the write fails); must not block
     * @return the wait: {@link Wait#end} when the write is done
     */
    public Wait write(long bytes, Runnable cut) {
        long allowed = responseRate > 0 ? graceNanos + bytes * 1_000_000_000L / responseRate : idleNanos;
        Wait w = new Wait(System.nanoTime() + allowed, 0, cut);
        waits.add(w);
        return w;
    }

    /** One look at every wait at {@code now} (System.nanoTime()); package-private for tests. */
    void tick(long now) {
        for (Wait w : waits) {
            if (now - w.deadline >= 0) w.expire();
        }
    }

    /** @return waits watched now */
    int size() {
        return waits.size();
    }

    /** Stops the reaper thread. */
    public void stop() {
        if (reaper != null) reaper.stop();
    }
}

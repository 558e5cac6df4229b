package kiln.db;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The thread {@code kiln-feed-wake}: completes the futures that the subscribers of the database's
 * change feeds wait on ({@link ChangeFeed#after}, {@link PrefixFeed#after}, the watches), in the
 * order the feeds hand them over, which is their publish order. So the writer thread, which
 * publishes, goes on with its next batch (and its writes' futures) instead of running every
 * subscriber's callback first: with 10,000 subscribers waiting on a feed, waking them took 0.3-0.45 ms
 * of the writer's CPU per commit ({@code make bench-feeds}). A subscriber is woken one hand-off later
 * than before (10-12 µs here). The thread starts with the first hand-over, and stops at the database's close
 * ({@link #stop}) after what was handed over before it.
 */
final class Wakes {
    private static final Logger LOG = Logger.getLogger(Wakes.class.getName());
    /** How long the close waits for the completions handed over before it, ms. */
    private static final long STOP_WAIT_MS = 10_000;

    /** Null until the first hand-over; guarded by this. */
    private ExecutorService executor;
    /** Set by {@link #stop}; guarded by this. */
    private boolean stopped;
    private volatile Thread thread;

    /**
     * Hands {@code completions} to the wake thread, after every one handed over before. Callable
     * holding a feed's lock: it only queues them.
     *
     * @return false when the database has closed ({@link #stop}): the caller runs them itself, once
     *         it holds no lock
     */
    boolean offer(Runnable completions) {
        ExecutorService e;
        synchronized (this) {
            if (stopped) return false;
            if (executor == null) executor = Executors.newSingleThreadExecutor(this::newThread);
            e = executor;
        }
        try {
            e.execute(completions);
            return true;
        } catch (RejectedExecutionException closed) {
            return false;
        }
    }

    /** @return whether anything was handed over: the thread started; for tests */
    synchronized boolean started() {
        return executor != null;
    }

    private Thread newThread(Runnable r) {
        Thread t = new Thread(r, "kiln-feed-wake");
        t.setDaemon(true);
        thread = t;
        return t;
    }

    /**
     * At the database's close: runs {@code last} (the subscribers' {@link DbException.Closed}) on the
     * wake thread after everything handed over before, stops the thread, and waits for both up to
     * {@value #STOP_WAIT_MS} ms (not when called on the wake thread itself, from a subscriber's
     * callback); past that, runs {@code last} on the caller.
     */
    void stop(Runnable last) {
        ExecutorService e;
        synchronized (this) {
            stopped = true;
            e = executor;
        }
        if (e == null) {
            last.run();
            return;
        }
        e.execute(last);
        e.shutdown();
        if (Thread.currentThread() == thread) return;
        try {
            if (e.awaitTermination(STOP_WAIT_MS, TimeUnit.MILLISECONDS)) return;
            LOG.warning("a change feed subscriber's callback has held thread kiln-feed-wake for over " + STOP_WAIT_MS
                + " ms; closing without it (a callback must not block: hand long work to a thread of its own)");
        } catch (InterruptedException i) {
            Thread.currentThread().interrupt();
        }
        last.run();
    }
}

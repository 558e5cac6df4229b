package kiln.db;

import java.time.Duration;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The database's deadline ({@link Db.Builder#deadline}): a query whose future the database has not
 * completed that long after it was asked for fails with {@link DbException.DeadlineExceeded}, which
 * says what became of it. It applies to every write ({@link Db#write}) and to every read that waits
 * for a read thread (an engine over the network: {@link GroupReader}); a read on LMDB runs on its
 * caller and is complete when {@link Db#read} returns, so it needs none.
 *
 * <h2>One thread, no timer per query</h2>
 * Writes run at over 100,000 a second. A timer task per query (a {@code ScheduledThreadPoolExecutor}
 * entry: an object, a heap insertion and a removal under a lock, a cancel on completion) would cost
 * more than queueing the write. Instead:
 * <ul>
 *   <li>each query records {@link System#nanoTime()} when it is asked for (tens of nanoseconds with
 *       Linux's TSC clock source; nothing when the deadline is off);</li>
 *   <li>the deadline is the same for every query and every queue is first in, first out, so the
 *       queries past it are always the oldest ones: the batch or group a thread has taken from its
 *       queue, then the head of the queue;</li>
 *   <li>one daemon thread, {@code kiln-db-deadline}, wakes every {@value #TICK_MS} ms and has each
 *       {@link Watched} queue fail its queries older than the deadline: the writer and each reader
 *       thread publish the batch or group they run (one array per batch or group), and the queue's
 *       {@code expire} walks that, then the queue's head, and stops at the first query still within
 *       its deadline. An idle database costs ten wake-ups a second; a busy one a look at each
 *       queue's head per wake-up, and nothing per query but its time stamp.</li>
 * </ul>
 * A query fails between its deadline and one tick after it (later only when the machine is too busy to
 * run the thread on time), never before. (Submitters racing each other may queue their queries a
 * few microseconds out of time order; a query behind a younger one then fails one tick later.)
 *
 * <h2>What each query is told</h2>
 * <ul>
 *   <li>a write still queued is withdrawn ({@link QueryFuture.Withdrawal}: the writer will never run
 *       it) and told it is not applied; the writer also withdraws, instead of beginning it, a write
 *       whose deadline passed while it waited;</li>
 *   <li>a write the writer has taken (its batch runs or commits) is told its outcome is unknown: it
 *       may still commit. If it does, the writer counts it and its change feeds publish it as for any
 *       other commit; its own attempt to complete the future is ignored (completing a completed
 *       future does nothing);</li>
 *   <li>a read is told the database did not answer; a read thread skips a read whose future is
 *       already complete.</li>
 * </ul>
 * Callbacks on a future failed here run on this thread, as callbacks on a write's future run on the
 * writer thread: keep them short.
 */
final class Deadline implements Runnable {
    private static final Logger LOG = Logger.getLogger(Deadline.class.getName());
    /** How often the thread looks for queries past the deadline, ms. */
    static final long TICK_MS = 100;

    /** A queue of queries whose oldest the deadline thread fails; implemented by {@link Writer} and {@link GroupReader}. */
    interface Watched {
        /**
         * Fails the queries not yet complete that were asked for a deadline or more before {@code now}
         * ({@link #passed}), each with the answer its state calls for. Called on the deadline thread.
         */
        void expire(long now);
    }

    private final Duration deadline;
    private final long nanos;
    /** The engine, as messages name it (its {@code toString}: "PostgreSQL at ..."). */
    private final String engine;
    private final Thread thread;
    private volatile List<Watched> watched = List.of();
    private volatile boolean stopping;

    /**
     * @param deadline > 0
     * @param engine   named in the messages
     */
    Deadline(Duration deadline, Object engine) {
        if (deadline.isNegative() || deadline.isZero()) throw new IllegalArgumentException("deadline must be positive, got " + deadline);
        this.deadline = deadline;
        this.nanos = deadline.toNanos();
        this.engine = String.valueOf(engine);
        this.thread = new Thread(this, "kiln-db-deadline");
        this.thread.setDaemon(true);
    }

    /** Starts the thread, watching {@code queues}. */
    void start(List<Watched> queues) {
        this.watched = List.copyOf(queues);
        thread.start();
    }

    /** Stops the thread and waits for it to end. */
    void stop() {
        stopping = true;
        thread.interrupt();
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** @return the time to record for a query asked for now: {@link System#nanoTime()} */
    static long stamp() {
        return System.nanoTime();
    }

    /** @return whether a query stamped {@code asked} ({@link #stamp}) is past its deadline at {@code now} */
    boolean passed(long asked, long now) {
        return now - asked >= nanos;
    }

    @Override
    public void run() {
        while (!stopping) {
            try {
                Thread.sleep(TICK_MS);
            } catch (InterruptedException e) {
                continue;  // stop() interrupts: the loop sees stopping
            }
            long now = System.nanoTime();
            for (Watched w : watched) {
                try {
                    w.expire(now);
                } catch (RuntimeException e) {
                    LOG.log(Level.SEVERE, "failing the queries past the database's deadline", e);
                }
            }
        }
    }

    private String within() {
        return " within its deadline of " + deadline.toMillis() + " ms (" + engine;
    }

    /** @return the failure of a read that got no answer in time */
    DbException.DeadlineExceeded read() {
        return new DbException.DeadlineExceeded("the database did not answer this read" + within() + "); retry shortly",
            deadline, false);
    }

    /** @return the failure of a write withdrawn from the writer's queue: it never runs */
    DbException.DeadlineExceeded notApplied() {
        return new DbException.DeadlineExceeded("the database did not begin this write" + within()
            + ", its writer busy with earlier writes): it was withdrawn and never runs, so it is not applied; retry shortly",
            deadline, false);
    }

    /** @return the failure of a write the writer had begun: it may still commit */
    DbException.DeadlineExceeded outcomeUnknown() {
        return new DbException.DeadlineExceeded("the database did not commit this write" + within()
            + "): it had begun and may still commit, so whether it is applied is unknown"
            + " (a write sent with an idempotency key, kiln.db.IdempotencyKeys, is safe to retry with the same key)",
            deadline, true);
    }
}

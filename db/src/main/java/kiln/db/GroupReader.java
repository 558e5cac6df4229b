package kiln.db;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.Lock;

/**
 * Reads for an engine whose reads block on the network ({@link KvEngine#readThreads}: PostgreSQL):
 * threads of their own, each taking every read waiting (up to {@value #MAX_GROUP}) and running them
 * one after the other in one read transaction — group commit's counterpart for reads. Each read
 * still sees a consistent snapshot taken after it was asked for; a group costs one transaction's
 * begin and end (a round trip each on PostgreSQL) and one thread wake-up instead of one per read.
 * A read that fails with a {@link DbException} (the engine's, which may have aborted the
 * transaction) ends its group's transaction: the reads after it run in a fresh one. With a
 * {@link Deadline}, a read not answered within it fails ({@link #expire}), and a read thread skips
 * the reads already answered so.
 */
final class GroupReader implements Deadline.Watched {
    /** The most reads run in one transaction. */
    static final int MAX_GROUP = 64;
    /** Reads that may wait for a read thread before {@link DbException.Overloaded}. */
    static final int QUEUE = 16_384;

    /** One read asked for, its future, and when it was asked for ({@link Deadline#stamp}; 0 without a deadline). */
    private record Pending<R>(Query<R> query, QueryFuture<R> future, long asked) {
        void run(Txn txn, DbState state, List<Runnable> completions) {
            if (future.isDone()) return;  // failed by the deadline meanwhile: nobody waits for it
            try {
                R result = query.run(txn);
                completions.add(() -> future.succeed(result));
            } catch (DbException e) {
                RuntimeException failure = state.fatalOr(e);
                completions.add(() -> future.fail(failure));
                throw e;
            } catch (Throwable t) {
                completions.add(() -> future.fail(t));
            }
        }
    }

    private final DbState state;
    private final KvEngine engine;
    private final Lock closeLock;
    private final ArrayBlockingQueue<Pending<?>> queue = new ArrayBlockingQueue<>(QUEUE);
    private final Thread[] threads;
    private volatile boolean stopping;
    /** Null when the database has no deadline. */
    private final Deadline deadline;
    /** With a deadline: the group each thread runs, in the order its reads were asked for, for {@link #expire}. */
    private final AtomicReferenceArray<Pending<?>[]> running;
    private static final Pending<?>[] NONE = new Pending<?>[0];

    /** @param deadline the database's, or null for none; it watches these readers once started */
    GroupReader(DbState state, KvEngine engine, Lock closeLock, int count, Deadline deadline) {
        this.state = state;
        this.engine = engine;
        this.closeLock = closeLock;
        this.deadline = deadline;
        this.running = new AtomicReferenceArray<>(count);
        this.threads = new Thread[count];
        for (int i = 0; i < count; i++) {
            int index = i;
            threads[i] = new Thread(() -> run(index), "kiln-db-read-" + (i + 1));
            threads[i].setDaemon(true);
            threads[i].start();
        }
    }

    /** Queues {@code query}; its future completes on a read thread. */
    <R> void submit(Query<R> query, QueryFuture<R> future) {
        Pending<R> p = new Pending<>(query, future, deadline == null ? 0 : Deadline.stamp());
        if (!queue.offer(p)) {
            future.fail(new DbException.Overloaded("too many reads waiting (" + QUEUE + "); retry shortly"));
        } else if (stopping && queue.remove(p)) {
            future.fail(state.closedError());
        }
    }

    /** Runs the reads already queued, then stops the threads. */
    void stop() {
        stopping = true;
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** @param index the thread's place in {@link #running} */
    private void run(int index) {
        List<Pending<?>> group = new ArrayList<>(MAX_GROUP);
        while (true) {
            try {
                Pending<?> first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) {
                    if (stopping) return;
                    continue;
                }
                group.add(first);
                queue.drainTo(group, MAX_GROUP - 1);
                if (deadline != null) {
                    long now = System.nanoTime();
                    group.removeIf(p -> answered(p, now));
                    if (group.isEmpty()) continue;
                    running.set(index, group.toArray(NONE));
                }
                runGroup(group);
            } catch (InterruptedException e) {
                if (stopping) return;
            } finally {
                if (deadline != null) running.set(index, null);
                group.clear();
            }
        }
    }

    /**
     * @return whether a read thread need not run {@code p}: answered already (by the deadline), or
     *         past its deadline at {@code now}, and failed so here
     */
    private boolean answered(Pending<?> p, long now) {
        if (!p.future().isDone() && deadline.passed(p.asked(), now)) p.future().fail(deadline.read());
        return p.future().isDone();
    }

    /** On the deadline thread: fails the reads past the deadline, those the threads run and those still queued. */
    @Override
    public void expire(long now) {
        for (int i = 0; i < running.length(); i++) {
            Pending<?>[] group = running.get(i);
            if (group == null) continue;
            for (Pending<?> p : group) {
                if (!deadline.passed(p.asked(), now)) break;
                if (!p.future().isDone()) p.future().fail(deadline.read());
            }
        }
        for (Pending<?> p; (p = queue.peek()) != null && deadline.passed(p.asked(), now); ) {
            p.future().fail(deadline.read());
            queue.remove(p);  // unless a read thread drained it just now: it skips a read already answered
        }
    }

    /** Runs the group's reads in as few transactions as their failures allow; completes their futures after each transaction ends. */
    private void runGroup(List<Pending<?>> group) {
        int next = 0;
        closeLock.lock();
        try {
            while (next < group.size()) {
                List<Runnable> completions = new ArrayList<>(group.size() - next);
                try {
                    state.checkOpen();
                    try (KvTxn t = engine.beginRead()) {
                        Txn txn = new Txn(t);
                        while (next < group.size()) group.get(next++).run(txn, state, completions);
                    }
                } catch (RuntimeException e) {
                    // the engine failed a read (or could not begin): that read has it; the rest go on afresh,
                    // unless no transaction can be had at all (the database closed or unreachable)
                    boolean begun = !completions.isEmpty();
                    RuntimeException failure = state.fatalOr(e);
                    if (!begun) {
                        for (; next < group.size(); next++) group.get(next).future().fail(failure);
                    }
                } finally {
                    for (Runnable r : completions) r.run();
                }
            }
        } finally {
            closeLock.unlock();
        }
    }
}

package kiln.db;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * Reads for an engine whose reads block on the network ({@link KvEngine#readThreads}: PostgreSQL):
 * threads of their own, each taking every read waiting (up to {@value #MAX_GROUP}) and running them
 * one after the other in one read transaction — group commit's counterpart for reads. Each read
 * still sees a consistent snapshot taken after it was asked for; a group costs one transaction's
 * begin and end (a round trip each on PostgreSQL) and one thread wake-up instead of one per read.
 * A read that fails with a {@link DbException} (the engine's, which may have aborted the
 * transaction) ends its group's transaction: the reads after it run in a fresh one.
 */
final class GroupReader {
    /** The most reads run in one transaction. */
    static final int MAX_GROUP = 64;
    /** Reads that may wait for a reader thread before {@link DbException.Overloaded}. */
    static final int QUEUE = 16_384;

    /** One read asked for, and its future. */
    private record Pending<R>(Query<R> query, QueryFuture<R> future) {
        void run(Txn txn, Db db, List<Runnable> completions) {
            try {
                R result = query.run(txn);
                completions.add(() -> future.succeed(result));
            } catch (DbException e) {
                RuntimeException failure = db.fatalOr(e);
                completions.add(() -> future.fail(failure));
                throw e;
            } catch (Throwable t) {
                completions.add(() -> future.fail(t));
            }
        }
    }

    private final Db db;
    private final KvEngine engine;
    private final Lock closeLock;
    private final ArrayBlockingQueue<Pending<?>> queue = new ArrayBlockingQueue<>(QUEUE);
    private final Thread[] threads;
    private volatile boolean stopping;

    GroupReader(Db db, KvEngine engine, Lock closeLock, int count) {
        this.db = db;
        this.engine = engine;
        this.closeLock = closeLock;
        this.threads = new Thread[count];
        for (int i = 0; i < count; i++) {
            threads[i] = new Thread(this::run, "kiln-db-reader-" + (i + 1));
            threads[i].setDaemon(true);
            threads[i].start();
        }
    }

    /** Queues {@code query}; its future completes on a reader thread. */
    <R> void submit(Query<R> query, QueryFuture<R> future) {
        Pending<R> p = new Pending<>(query, future);
        if (!queue.offer(p)) {
            future.fail(new DbException.Overloaded("too many reads waiting (" + QUEUE + "); retry shortly"));
        } else if (stopping && queue.remove(p)) {
            future.fail(new DbException.Closed("database " + db.directory() + " is closed"));
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

    private void run() {
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
                runGroup(group);
            } catch (InterruptedException e) {
                if (stopping) return;
            } finally {
                group.clear();
            }
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
                    db.checkOpen();
                    try (KvTxn t = engine.beginRead()) {
                        Txn txn = new Txn(t);
                        while (next < group.size()) group.get(next++).run(txn, db, completions);
                    }
                } catch (RuntimeException e) {
                    // the engine failed a read (or could not begin): that read has it; the rest go on afresh,
                    // unless no transaction can be had at all (the database closed or unreachable)
                    boolean begun = !completions.isEmpty();
                    RuntimeException failure = db.fatalOr(e);
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

package kiln.bench;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbStats;
import kiln.db.Table;

/**
 * Durable writes per second at a fixed number of writes in flight: {@code writers} asynchronous
 * chains, each submitting its next write (one random key of a 10,000-row int table set to a random
 * value, like one TechEmpower /updates row) as soon as its previous write's future completed.
 * Completions hop to two client threads (as a front end's carrier threads would) before submitting,
 * so the writer thread does nothing but run and commit writes.
 *
 * <p>A plain harness rather than JMH: the quantity is a steady state of many outstanding futures,
 * not the latency of one call, and each point needs its own database and writer thread.
 */
final class WriteBench {
    /** Outcome of one point. */
    static final class Point {
        final int writers;
        final boolean groupCommit;
        final double writesPerSecond;
        final double averageBatch;

        Point(int writers, boolean groupCommit, double writesPerSecond, double averageBatch) {
            this.writers = writers;
            this.groupCommit = groupCommit;
            this.writesPerSecond = writesPerSecond;
            this.averageBatch = averageBatch;
        }
    }

    private final Table<Integer, Integer> table;
    private final Db db;
    private final ExecutorService clients;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong completed = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final CountDownLatch stopped;

    private WriteBench(Db db, int writers) {
        this.db = db;
        this.table = db.table("world", Codec.INT, Codec.INT);
        this.clients = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "bench-client");
            t.setDaemon(true);
            return t;
        });
        this.stopped = new CountDownLatch(writers);
    }

    /**
     * Measures one point in a fresh database: {@code warmupMs} unmeasured, then {@code measureMs}
     * measured, then stops the chains and waits for their last writes.
     *
     * @param groupCommit true: the default {@link Db.Builder#maxBatch}; false: maxBatch(1), one
     *                    commit (fsync) per write
     */
    static Point run(int writers, boolean groupCommit, long warmupMs, long measureMs) throws InterruptedException {
        Path dir = BenchDirs.fresh("writes-" + writers + (groupCommit ? "-group" : "-single"));
        Db.Builder builder = groupCommit ? Db.builder(dir) : Db.builder(dir).maxBatch(1);
        try (Db db = builder.open()) {
            WriteBench bench = new WriteBench(db, writers);
            try {
                return bench.measure(writers, groupCommit, warmupMs, measureMs);
            } finally {
                bench.clients.shutdownNow();
            }
        } finally {
            BenchDirs.delete(dir);
        }
    }

    private Point measure(int writers, boolean groupCommit, long warmupMs, long measureMs) throws InterruptedException {
        for (int i = 0; i < writers; i++) next();
        Thread.sleep(warmupMs);
        long n0 = completed.get();
        DbStats s0 = db.stats();
        long t0 = System.nanoTime();
        Thread.sleep(measureMs);
        long n1 = completed.get();
        DbStats s1 = db.stats();
        long t1 = System.nanoTime();
        running.set(false);
        if (!stopped.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("writes did not drain in 60 s");
        if (failure.get() != null) throw new IllegalStateException("a benchmark write failed", failure.get());
        double seconds = (t1 - t0) / 1e9;
        long commits = s1.commits - s0.commits;
        return new Point(writers, groupCommit, (n1 - n0) / seconds, commits == 0 ? 0 : (double) (s1.writes - s0.writes) / commits);
    }

    /** Submits one chain's next write, or ends the chain once the point is over. */
    private void next() {
        if (!running.get()) {
            stopped.countDown();
            return;
        }
        // random choices before the lambda: the writer may run a query twice (see kiln.db.Query)
        int key = 1 + ThreadLocalRandom.current().nextInt(ReadBench.ROWS);
        int value = ThreadLocalRandom.current().nextInt(1, 10_001);
        db.write(txn -> {
            table.put(txn, key, value);
            return null;
        }).whenCompleteAsync((r, e) -> {
            if (e != null) {
                failure.compareAndSet(null, e);
                running.set(false);
            } else {
                completed.incrementAndGet();
            }
            next();
        }, clients);
    }
}

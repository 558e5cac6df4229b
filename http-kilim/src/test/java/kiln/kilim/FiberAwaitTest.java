package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kilim.AffineScheduler;
import kilim.Pausable;
import kilim.Scheduler;
import kilim.Task;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;

/**
 * {@link Fibers#await} on a database future pauses the fiber, not its carrier thread: thousands of fibers wait for
 * their writes at once on two carrier threads.
 */
class FiberAwaitTest {
    private static final int FIBERS = 2000;
    private static final int CARRIERS = 2;

    @TempDir Path dir;

    /** One fiber: write its key, await the durable commit, read the key back, await again. */
    static final class WriteThenRead extends Task<Object> {
        private final Db db;
        private final Table<Integer, Integer> table;
        private final int key;
        private final AtomicReferenceArray<Integer> results;
        private final Set<Thread> carriers;
        private final CountDownLatch done;

        WriteThenRead(Db db, Table<Integer, Integer> table, int key, AtomicReferenceArray<Integer> results,
                      Set<Thread> carriers, CountDownLatch done) {
            this.db = db;
            this.table = table;
            this.key = key;
            this.results = results;
            this.carriers = carriers;
            this.done = done;
        }

        @Override
        public void execute() throws Pausable {
            try {
                int value = key * 7 - 1;
                carriers.add(Thread.currentThread());
                Fibers.await(db.write(txn -> { table.put(txn, key, value); return null; }));
                carriers.add(Thread.currentThread());
                results.set(key, Fibers.await(db.read(txn -> table.get(txn, key))));
                carriers.add(Thread.currentThread());
            } finally {
                done.countDown();
            }
        }
    }

    @Test
    void thousandsOfFibersAwaitWritesOnTwoCarrierThreads() throws Exception {
        Scheduler scheduler = new AffineScheduler(CARRIERS, 0);
        try (Db db = Db.open(dir)) {
            Table<Integer, Integer> table = db.table("t", Codec.INT, Codec.INT);
            AtomicReferenceArray<Integer> results = new AtomicReferenceArray<>(FIBERS);
            Set<Thread> carriers = ConcurrentHashMap.newKeySet();
            CountDownLatch done = new CountDownLatch(FIBERS);
            // Hold the writer thread in a write of its own, so that every fiber's write queues behind it.
            CountDownLatch writerHeld = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            db.write(txn -> {
                writerHeld.countDown();
                return release.await(60, TimeUnit.SECONDS);
            });
            assertTrue(writerHeld.await(30, TimeUnit.SECONDS), "the writer thread never ran the holding write");
            try {
                for (int i = 0; i < FIBERS; i++) {
                    new WriteThenRead(db, table, i, results, carriers, done).setScheduler(scheduler).start();
                }
                // Every fiber's write is queued while the writer is held: only possible if await
                // released the two carrier threads instead of blocking them.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (db.stats().queued < FIBERS && System.nanoTime() < deadline) Thread.sleep(5);
                assertEquals(FIBERS, db.stats().queued, "writes in flight at once");
            } finally {
                release.countDown();
            }
            assertTrue(done.await(60, TimeUnit.SECONDS), "fibers still running: " + done.getCount());
            for (int i = 0; i < FIBERS; i++) {
                assertEquals(i * 7 - 1, results.get(i), "fiber " + i);
            }
            assertTrue(carriers.size() <= CARRIERS, "carrier threads seen: " + carriers);
            assertTrue(carriers.stream().noneMatch(th -> th.getName().equals("kiln-db-writer")), "a fiber ran on the writer thread");
        } finally {
            scheduler.shutdown();
        }
    }
}

package kiln.loom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbStats;
import kiln.db.Table;
import kiln.server.VirtualThreads;

/**
 * Virtual threads put no bound on concurrent readers, and each read holds one of LMDB's reader slots
 * (1,024 by default) while its query runs: a burst beyond them waits for a slot instead of failing.
 */
class ReadSlotsTest {
    @TempDir Path dir;

    @Test
    void tenThousandConcurrentReadsOnVirtualThreadsWaitForReaderSlotsAndAllSucceed() throws Exception {
        int readers = 10_000;
        try (Db db = Db.open(dir)) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            db.write(txn -> {
                for (int i = 0; i < 100; i++) t.put(txn, i, i * 3);
                return null;
            }).join();
            ThreadFactory virtual = VirtualThreads.factory("reader-");
            CountDownLatch go = new CountDownLatch(1);
            AtomicInteger right = new AtomicInteger();
            AtomicInteger mostInUse = new AtomicInteger();
            Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>(readers);
            for (int i = 0; i < readers; i++) {
                int k = i % 100;
                Thread th = virtual.newThread(() -> {
                    try {
                        go.await();
                        int v = db.read(txn -> {
                            Integer found = t.get(txn, k);
                            Thread.sleep(5);  // parks the virtual thread while its read holds a slot
                            mostInUse.accumulateAndGet(db.stats().readTxnsInUse, Math::max);
                            return found;
                        }).join();
                        if (v == k * 3) right.incrementAndGet();
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                threads.add(th);
                th.start();
            }
            go.countDown();
            for (Thread th : threads) th.join(TimeUnit.SECONDS.toMillis(120));
            assertEquals(List.of(), failures.stream().limit(3).map(Throwable::toString).toList(), failures.size() + " reads failed");
            assertEquals(readers, right.get());
            DbStats s = db.stats();
            assertEquals(1024 - 8, s.readSlots);
            assertTrue(mostInUse.get() > 100 && mostInUse.get() <= s.readSlots, "reads in flight at once: " + mostInUse.get() + " of " + s);
            assertEquals(0, s.readTxnsInUse, s.toString());
            assertTrue(s.readTxnsPooled <= s.readSlots, s.toString());
        }
    }
}

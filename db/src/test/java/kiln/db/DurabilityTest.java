package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What survives close and reopen, and the memory map growing under the writes. */
class DurabilityTest {
    @TempDir Path dir;

    @Test
    void dataSurvivesCloseAndReopen() {
        try (Db db = Db.open(dir)) {
            Table<Integer, String> t = db.table("names", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 1, "one"); t.put(txn, -2, "minus two"); return null; }).join();
        }
        try (Db db = Db.open(dir)) {
            Table<Integer, String> t = db.table("names", Codec.INT, Codec.STRING);
            assertEquals("one", db.read(txn -> t.get(txn, 1)).join());
            assertEquals("minus two", db.read(txn -> t.get(txn, -2)).join());
            assertEquals(2L, db.read(t::count).join());
        }
    }

    @Test
    void closeCommitsWritesStillQueued() throws Exception {
        int n = 2000;
        List<QueryFuture<Object>> writes = new ArrayList<>();
        Db db = Db.open(dir);
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        // Hold the writer until close() has begun, so every write below is still queued then.
        QueryFuture<Object> gate = db.write(txn -> {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!db.isClosed() && System.nanoTime() < deadline) Thread.sleep(1);
            return null;
        });
        for (int i = 0; i < n; i++) {
            int k = i;
            writes.add(db.write(txn -> { t.put(txn, k, -k); return null; }));
        }
        assertFalse(gate.isDone());
        db.close();
        assertTrue(gate.isDone());
        for (QueryFuture<Object> w : writes) {
            assertTrue(w.isDone() && !w.isCompletedExceptionally(), "every queued write completed successfully by close()");
        }
        try (Db reopened = Db.open(dir)) {
            Table<Integer, Integer> t2 = reopened.table("t", Codec.INT, Codec.INT);
            assertEquals((long) n, reopened.read(t2::count).join());
            for (int i = 0; i < n; i++) {
                int k = i;
                assertEquals(-k, reopened.read(txn -> t2.get(txn, k)).join());
            }
        }
    }

    @Test
    void closeIsIdempotent() {
        Db db = Db.open(dir);
        db.close();
        db.close();
        assertTrue(db.isClosed());
    }

    @Test
    void statsStayReadableAfterClose() {
        Db db = Db.open(dir);
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        db.write(txn -> { t.put(txn, 1, 1); return null; }).join();
        db.close();
        DbStats s = db.stats();
        assertEquals(1, s.writes);
        assertEquals(1, s.commits);
        assertEquals(64L << 20, s.mapSize);
    }

    @Test
    void readsRunningWhileTheMapGrowsSeeCommittedData() throws Exception {
        String value = "v".repeat(8_000);
        try (Db db = Db.builder(dir).mapSize(64 << 10).open()) {
            Table<Integer, String> t = db.table("blobs", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, -1, "anchor"); return null; }).join();
            AtomicBoolean writing = new AtomicBoolean(true);
            CountDownLatch reading = new CountDownLatch(2);
            ExecutorService readers = Executors.newFixedThreadPool(2);
            List<Future<?>> checks = new ArrayList<>();
            try {
                for (int r = 0; r < 2; r++) {
                    checks.add(readers.submit(() -> {
                        long last = 0;
                        reading.countDown();
                        while (writing.get()) {
                            long n = db.read(t::count).join();
                            assertTrue(n >= last, "count went back from " + last + " to " + n);
                            assertEquals("anchor", db.read(txn -> t.get(txn, -1)).join());
                            last = n;
                        }
                        return null;
                    }));
                }
                assertTrue(reading.await(30, TimeUnit.SECONDS), "reader threads did not start");
                for (int i = 0; i < 300; i++) {
                    int k = i;
                    db.write(txn -> { t.put(txn, k, value); return null; }).join();
                }
            } finally {
                writing.set(false);
                readers.shutdown();
            }
            for (Future<?> c : checks) c.get(30, TimeUnit.SECONDS);
            assertTrue(db.stats().mapGrowths > 0, db.stats().toString());
        }
    }

    @Test
    void tinyMapGrowsUnderMegabytesOfWrites() {
        int values = 400;
        int valueBytes = 10_000; // 4 MB in all, against a 64 KiB map
        String value = "v".repeat(valueBytes - 4);
        long growths;
        try (Db db = Db.builder(dir).mapSize(64 << 10).open()) {
            Table<Integer, String> t = db.table("blobs", Codec.INT, Codec.STRING);
            // a read before growth leaves a pooled read transaction that must survive the remap
            assertEquals(0L, db.read(t::count).join());
            List<QueryFuture<Object>> writes = new ArrayList<>();
            for (int i = 0; i < values; i++) {
                int k = i;
                String v = String.format("%04d", k) + value;
                writes.add(db.write(txn -> { t.put(txn, k, v); return null; }));
            }
            for (QueryFuture<Object> w : writes) w.join();
            DbStats s = db.stats();
            growths = s.mapGrowths;
            assertTrue(s.mapGrowths > 0, s.toString());
            assertTrue(s.mapSize >= (long) values * valueBytes, s.toString());
            assertEquals((long) values, db.read(t::count).join());
            assertEquals(String.format("%04d", 7) + value, db.read(txn -> t.get(txn, 7)).join());
        }
        try (Db db = Db.builder(dir).mapSize(64 << 10).open()) {
            Table<Integer, String> t = db.table("blobs", Codec.INT, Codec.STRING);
            assertEquals((long) values, db.read(t::count).join(), "after reopen (map had grown " + growths + " times)");
            for (int i = 0; i < values; i++) {
                int k = i;
                assertEquals(String.format("%04d", k) + value, db.read(txn -> t.get(txn, k)).join());
            }
            // and it keeps working: a further write into the reopened database
            db.write(txn -> { t.put(txn, values, value); return null; }).join();
            assertEquals((long) values + 1, db.read(t::count).join());
        }
    }
}

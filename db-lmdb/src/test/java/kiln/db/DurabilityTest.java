package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import kiln.db.lmdb.LmdbEngine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What survives close and reopen, and the memory map's ceiling. */
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
        long mapSizeAtOpen = db.stats().mapSize;
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        db.write(txn -> { t.put(txn, 1, 1); return null; }).join();
        db.close();
        DbStats s = db.stats();
        assertEquals(1, s.writes);
        assertEquals(1, s.commits);
        assertEquals(mapSizeAtOpen, s.mapSize);
    }

    /**
     * The map is the ceiling from the start, so a write never waits for every read to end before the
     * map grows. With growth on demand this test hung: the read held the map's lock that growing
     * needed, while it waited for the write that needed the growth.
     */
    @Test
    void aReadThatWaitsForAWriteOfMegabytesDoesNotDeadlock() {
        Db db = Db.open(dir);
        try {
            Table<Integer, String> t = db.table("blobs", Codec.INT, Codec.STRING);
            String value = "v".repeat(4 << 20);
            int written = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> db.read(txn ->
                db.write(w -> { t.put(w, 1, value); return 1; }).join()).join());
            assertEquals(1, written);
            assertEquals(value.length(), db.read(txn -> t.get(txn, 1)).join().length());
        } finally {
            db.close();
        }
    }

    @Test
    void theMapIsItsCeilingFromTheStartAndNeverMoves() {
        long mapSize;
        try (Db db = Db.builder(LmdbEngine.builder(dir).maxMapSize(64L << 20).open()).open()) {
            Table<Integer, String> t = db.table("blobs", Codec.INT, Codec.STRING);
            mapSize = db.stats().mapSize;
            assertEquals(64L << 20, mapSize);
            long usedAtOpen = db.stats().usedBytes;
            String value = "v".repeat(10_000);
            List<QueryFuture<Object>> writes = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                int k = i;
                writes.add(db.write(txn -> { t.put(txn, k, value); return null; }));
            }
            for (QueryFuture<Object> w : writes) w.join();
            DbStats s = db.stats();
            assertEquals(mapSize, s.mapSize, "4 MB later: " + s);
            assertTrue(s.usedBytes > usedAtOpen + (4L << 20), "the file grew with the pages written: " + s);
        }
        try (Db db = Db.builder(LmdbEngine.builder(dir).maxMapSize(64L << 20).open()).open()) {
            Table<Integer, String> t = db.table("blobs", Codec.INT, Codec.STRING);
            assertEquals(400L, db.read(t::count).join());
        }
    }

    @Test
    void pastTheCeilingAWriteFailsDatabaseFullAloneAndReadsGoOn() throws Exception {
        try (Db db = Db.builder(LmdbEngine.builder(dir).maxMapSize(2L << 20).open()).open()) {
            Table<Integer, String> t = db.table("blobs", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 0, "kept"); return null; }).join();
            String value = "v".repeat(100_000);
            List<QueryFuture<Object>> writes = new ArrayList<>();
            WriterGate gate = new WriterGate(db);
            try {
                for (int i = 1; i <= 40; i++) {  // 4 MB into a 2 MiB map, in one batch
                    int k = i;
                    writes.add(db.write(txn -> { t.put(txn, k, value); return null; }));
                }
            } finally {
                gate.open();
            }
            int committed = 0;
            int full = 0;
            for (QueryFuture<Object> w : writes) {
                try {
                    w.join();
                    committed++;
                } catch (CompletionException e) {
                    DbException.DatabaseFull f = assertInstanceOf(DbException.DatabaseFull.class, e.getCause());
                    assertTrue(f.getMessage().startsWith("database full") && f.getMessage().contains("maxMapSize"), f.getMessage());
                    full++;
                }
            }
            assertTrue(committed > 0 && full > 0, committed + " committed, " + full + " database full");
            assertEquals("kept", db.read(txn -> t.get(txn, 0)).join(), "reads go on");
            assertEquals(committed + 1L, db.read(t::count).join(), "every write that fitted committed, alone if need be");
            db.write(txn -> { t.delete(txn, 1); t.put(txn, 1000, "small"); return null; }).join();  // room again
            assertTrue(db.health().isOk(), db.health().toString());
        }
    }

    @Test
    void theDefaultCeilingIsWhatTheDiskHoldsLessAReserve() throws Exception {
        java.nio.file.FileStore store = java.nio.file.Files.getFileStore(dir);
        long ceiling = LmdbEngine.defaultMaxMapSize(dir);
        long reserve = Math.max(64L << 20, store.getTotalSpace() / 20);
        assertTrue(ceiling % (1 << 20) == 0 && ceiling >= 1 << 20, "whole MiB: " + ceiling);
        assertTrue(ceiling <= Math.max(1L << 20, store.getUsableSpace() - reserve + (1 << 20)),
            ceiling + " against " + store.getUsableSpace() + " usable, reserve " + reserve);
        try (Db db = Db.open(dir)) {
            assertTrue(Math.abs(db.stats().mapSize - ceiling) <= 64L << 20, "the default: " + db.stats().mapSize + " vs " + ceiling);
        }
    }

    @Test
    void verifyReadsEveryTableItHoldsOpenedOrNot() {
        try (Db db = Db.open(dir)) {
            Table<Integer, String> t = db.table("names", Codec.INT, Codec.STRING);
            db.table("empty", Codec.INT, Codec.INT);
            db.write(txn -> { for (int i = 0; i < 500; i++) t.put(txn, i, "n" + i); return null; }).join();
        }
        try (Db db = Db.open(dir)) {
            db.table("names", Codec.INT, Codec.STRING);  // "empty" is not opened by this process
            assertEquals(java.util.Map.of("names", 500L, "empty", 0L, Catalog.META, 1L), db.verify());
        }
    }
}

package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The writer thread: visibility after completion, group commit, and per-write rollback. */
class WriteTest {
    @TempDir Path dir;
    Db db;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    private Table<Integer, Integer> open(Db.Builder builder) {
        db = builder.open();
        return db.table("t", Codec.INT, Codec.INT);
    }

    private static QueryFuture<Object> put(Db db, Table<Integer, Integer> t, int k, int v) {
        return db.write(txn -> { t.put(txn, k, v); return null; });
    }

    @Test
    void writeIsVisibleToReadsOnceItsFutureCompletes() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        ExecutorService reader = Executors.newSingleThreadExecutor();
        try {
            List<CompletableFuture<Integer>> seen = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                int k = i;
                // read on another thread as soon as the completion is observed, without join()
                seen.add(put(db, t, k, k * 3).thenApplyAsync(x -> db.read(txn -> t.get(txn, k)).join(), reader));
            }
            for (int i = 0; i < seen.size(); i++) {
                assertEquals(i * 3, seen.get(i).get(30, TimeUnit.SECONDS), "read right after write " + i + " completed");
            }
        } finally {
            reader.shutdownNow();
        }
    }

    @Test
    void writeReturnsTheQueryResult() {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        put(db, t, 1, 10).join();
        assertEquals(11, db.write(txn -> { int v = t.get(txn, 1) + 1; t.put(txn, 1, v); return v; }).join());
        assertEquals(11, db.read(txn -> t.get(txn, 1)).join());
    }

    @Test
    void writesQueuedDuringACommitShareOneCommit() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        List<QueryFuture<Object>> writes = new ArrayList<>();
        WriterGate gate = new WriterGate(db);
        try {
            for (int i = 0; i < 1000; i++) writes.add(put(db, t, i, i));
            assertEquals(1000, db.stats().queued);
        } finally {
            gate.open();
        }
        for (QueryFuture<Object> w : writes) w.join();
        DbStats after = db.stats();
        // the gate's own commit plus one batch of 1000 (default maxBatch 1024)
        assertEquals(1001, after.writes);
        assertEquals(2, after.commits, after.toString());
        assertEquals(1000, after.largestBatch);
        assertEquals(1000L, db.read(t::count).join());
    }

    @Test
    void statsCountCommitsByBatchSizeAndTheMapInUse() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        long usedAtOpen = db.stats().usedBytes;
        List<QueryFuture<Object>> writes = new ArrayList<>();
        WriterGate gate = new WriterGate(db);
        try {
            for (int i = 0; i < 1000; i++) writes.add(put(db, t, i, i));
        } finally {
            gate.open();
        }
        for (QueryFuture<Object> w : writes) w.join();
        put(db, t, 1000, 0).join();
        put(db, t, 1001, 0).join();
        DbStats s = db.stats();
        long[] byBatchSize = s.commitsByBatchSize();
        assertEquals(32, byBatchSize.length);
        assertEquals(3, byBatchSize[0], "the gate's commit and two writes alone: " + s);
        assertEquals(1, byBatchSize[10], "one batch of 1000 writes, in 513..1024");
        assertEquals(1024, DbStats.batchSizeUpperBound(10));
        assertEquals(s.commits, java.util.Arrays.stream(byBatchSize).sum(), "every commit in one bucket");
        assertEquals(1003, s.batchedWrites);
        if (!Engines.lmdb()) return;  // no map, no pages
        assertTrue(usedAtOpen > 0, "the map in use at open: " + usedAtOpen);
        assertTrue(s.usedBytes > usedAtOpen && s.usedBytes <= s.mapSize, "1002 rows use more pages: " + usedAtOpen + " -> " + s);
    }

    @Test
    void maxBatchCapsWritesPerCommit() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir).maxBatch(100));
        List<QueryFuture<Object>> writes = new ArrayList<>();
        WriterGate gate = new WriterGate(db);
        try {
            for (int i = 0; i < 1000; i++) writes.add(put(db, t, i, i));
        } finally {
            gate.open();
        }
        for (QueryFuture<Object> w : writes) w.join();
        DbStats s = db.stats();
        assertEquals(1 + 10, s.commits, s.toString());
        assertEquals(100, s.largestBatch);
    }

    @Test
    void concurrentWritersAreGroupCommitted() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        int threads = 32;
        int each = 50;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int th = 0; th < threads; th++) {
                int base = th * each;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < each; i++) put(db, t, base + i, i).join();
                }));
            }
            for (Future<?> f : done) f.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        DbStats s = db.stats();
        assertEquals(threads * each, s.writes);
        // 32 writers each waiting for their commit: one fsync should serve many of them. (On the
        // in-memory engine a commit takes microseconds, so how many writers queue behind one is luck.)
        if (!Engines.memory()) assertTrue(s.commits < s.writes / 4, "expected group commit, got " + s);
        assertEquals((long) threads * each, db.read(t::count).join());
    }

    @Test
    void maxBatchOneCommitsEveryWriteAlone() {
        Table<Integer, Integer> t = open(Engines.builder(dir).maxBatch(1));
        List<QueryFuture<Object>> writes = new ArrayList<>();
        for (int i = 0; i < 300; i++) writes.add(put(db, t, i, i));
        for (QueryFuture<Object> w : writes) w.join();
        DbStats s = db.stats();
        assertEquals(300, s.writes);
        assertEquals(300, s.commits);
        assertEquals(1, s.largestBatch);
    }

    @Test
    void throwingWriteIsRolledBackAloneAndItsBatchMatesCommit() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        IllegalStateException boom = new IllegalStateException("boom");
        IOException checked = new IOException("checked boom");
        QueryFuture<Object> before;
        QueryFuture<Object> thrower;
        QueryFuture<Object> checkedThrower;
        QueryFuture<Object> after;
        long commitsBefore;
        WriterGate gate = new WriterGate(db);
        try {
            commitsBefore = db.stats().commits;
            before = put(db, t, 1, 1);
            thrower = db.write(txn -> { t.put(txn, 2, 2); t.put(txn, 1, -1); throw boom; });
            checkedThrower = db.write(txn -> { t.put(txn, 3, 3); throw checked; });
            after = put(db, t, 4, 4);
        } finally {
            gate.open();
        }
        assertNull(before.join());
        assertNull(after.join());
        assertSame(boom, assertThrows(CompletionException.class, thrower::join).getCause());
        assertSame(checked, assertThrows(CompletionException.class, checkedThrower::join).getCause());

        DbStats s = db.stats();
        assertEquals(commitsBefore + 2, s.commits, "gate commit + one batch of four: " + s);
        assertEquals(2, s.failedWrites);
        assertEquals(1, db.read(txn -> t.get(txn, 1)).join(), "the thrower's overwrite of key 1 was rolled back");
        assertNull(db.read(txn -> t.get(txn, 2)).join());
        assertNull(db.read(txn -> t.get(txn, 3)).join());
        assertEquals(4, db.read(txn -> t.get(txn, 4)).join());
    }

    /**
     * A value over {@link Table#MAX_VALUE_BYTES} is refused at the put, naming the limit, on every
     * engine (over PostgreSQL a 100 MB value once ended a server with OutOfMemoryError): that write
     * fails alone, its batch-mates commit, and a value of exactly the limit is stored.
     */
    @Test
    void aValueOverTheLimitFailsAloneNamingIt() throws Exception {
        db = Engines.builder(dir).open();
        Table<Integer, byte[]> t = db.table("blobs", Codec.INT, Codec.BYTES);
        QueryFuture<Object> before;
        QueryFuture<Object> tooLarge;
        QueryFuture<Object> largest;
        WriterGate gate = new WriterGate(db);
        try {
            before = db.write(txn -> { t.put(txn, 1, new byte[] {1}); return null; });
            tooLarge = db.write(txn -> { t.put(txn, 2, new byte[Table.MAX_VALUE_BYTES + 1]); return null; });
            largest = db.write(txn -> { t.put(txn, 3, new byte[Table.MAX_VALUE_BYTES]); return null; });
        } finally {
            gate.open();
        }
        assertNull(before.get(60, TimeUnit.SECONDS));
        assertNull(largest.get(60, TimeUnit.SECONDS));
        Throwable why = assertThrows(CompletionException.class, tooLarge::join).getCause();
        assertSame(DbException.ValueTooLarge.class, why.getClass());
        assertTrue(why.getMessage().contains("table 'blobs' is 16777217 bytes; values are at most 16777216 bytes"), why.getMessage());
        assertNull(db.read(txn -> t.get(txn, 2)).join());
        assertEquals(Table.MAX_VALUE_BYTES, db.read(txn -> t.get(txn, 3).length).join());
    }

    /**
     * Something fails after a batch's commit (the test hook stands for it): the writes are in, so
     * they are answered as committed, never failed (a client would retry them) nor run again.
     */
    @Test
    void aFailureAfterTheCommitAnswersTheWritesCommitted() throws Exception {
        java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
        db = Engines.builder(dir).betweenCommitAndPublish(() -> {
            throw new IllegalStateException("test: a failure after the commit");
        }).open();
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        db.changeFeed(t, 100);  // the hook runs after commits with change sets
        QueryFuture<Object> w = db.write(txn -> { runs.incrementAndGet(); t.put(txn, 1, 1); return null; });
        assertNull(w.get(30, TimeUnit.SECONDS));
        assertEquals(1, runs.get(), "run once");
        assertEquals(1, db.read(txn -> t.get(txn, 1)).join());
    }

    @Test
    void throwingWriteDoesNotStopLaterWrites() {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        QueryFuture<Object> bad = db.write(txn -> { throw new ArithmeticException("bad"); });
        assertThrows(CompletionException.class, bad::join);
        put(db, t, 1, 1).join();
        assertEquals(1, db.read(txn -> t.get(txn, 1)).join());
        assertFalse(db.isClosed());
    }

    @Test
    void writeInsideAWriteQueryIsIllegalStateNotADeadlock() {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        QueryFuture<Object> nested = db.write(txn -> db.write(w -> { t.put(w, 1, 1); return null; }).join());
        assertSame(IllegalStateException.class, assertThrows(CompletionException.class, nested::join).getCause().getClass());
        put(db, t, 2, 2).join(); // the writer thread is still alive
        assertNull(db.read(txn -> t.get(txn, 1)).join());
    }

    @Test
    void readInsideAWriteQueryIsIllegalState() {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        QueryFuture<Integer> nested = db.write(txn -> db.read(r -> t.get(r, 1)).join());
        assertSame(IllegalStateException.class, assertThrows(CompletionException.class, nested::join).getCause().getClass());
    }

    /**
     * A plain (non-async) callback on a write future runs on the writer thread after the commit,
     * with no transaction open: it may read and submit writes. The gate makes sure the callback is
     * attached before the write completes, so it really runs on the writer thread.
     */
    @Test
    void callbacksOnTheWriterThreadMayReadAndWrite() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        WriterGate gate = new WriterGate(db);
        CompletableFuture<Integer> readInCallback = new CompletableFuture<>();
        CompletableFuture<Object> writeInCallback = new CompletableFuture<>();
        try {
            put(db, t, 1, 10).thenAccept(ignored -> {
                readInCallback.complete(db.read(txn -> t.get(txn, 1)).join());
                db.write(txn -> { t.put(txn, 2, 20); return null; }).whenComplete((r, e) -> {
                    if (e != null) writeInCallback.completeExceptionally(e);
                    else writeInCallback.complete(r);
                });
            });
        } finally {
            gate.open();
        }
        assertEquals(10, readInCallback.get(30, TimeUnit.SECONDS));
        writeInCallback.get(30, TimeUnit.SECONDS);
        assertEquals(20, db.read(txn -> t.get(txn, 2)).join());
    }

    @Test
    void closeFromTheWriterThreadIsIllegalStateNotAHang() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        WriterGate gate = new WriterGate(db);
        CompletableFuture<Throwable> closeInCallback = new CompletableFuture<>();
        try {
            put(db, t, 1, 1).thenAccept(ignored -> {
                try {
                    db.close();
                    closeInCallback.complete(null);
                } catch (RuntimeException e) {
                    closeInCallback.complete(e);
                }
            });
        } finally {
            gate.open();
        }
        assertSame(IllegalStateException.class, closeInCallback.get(30, TimeUnit.SECONDS).getClass());
        assertFalse(db.isClosed());
    }

    @Test
    void tableFromTheWriterThreadIsIllegalStateNotADeadlock() throws Exception {
        Table<Integer, Integer> t = open(Engines.builder(dir));
        CompletableFuture<Throwable> tableInCallback = new CompletableFuture<>();
        WriterGate gate = new WriterGate(db);
        try {
            put(db, t, 1, 1).thenAccept(ignored -> {
                try {
                    db.table("late", Codec.INT, Codec.INT);
                    tableInCallback.complete(null);
                } catch (RuntimeException e) {
                    tableInCallback.complete(e);
                }
            });
        } finally {
            gate.open();
        }
        assertSame(IllegalStateException.class, tableInCallback.get(30, TimeUnit.SECONDS).getClass());
        put(db, t, 2, 2).join();  // the writer goes on
    }
}

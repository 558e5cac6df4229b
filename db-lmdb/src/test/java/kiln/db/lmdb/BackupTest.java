package kiln.db.lmdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.QueryFuture;
import kiln.db.Table;

/** {@link Db#backup}: a compacted, consistent copy that opens as a database, taken while writes go on. */
class BackupTest {
    @TempDir Path tmp;
    Db db;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    private static QueryFuture<Object> put(Db db, Table<Integer, Integer> t, int k, int v) {
        return db.write(txn -> { t.put(txn, k, v); return null; });
    }

    @Test
    void theCopyOpensAsADatabaseHoldingEveryRowAndIsCompacted() throws Exception {
        db = Db.open(tmp.resolve("data"));
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        Table<String, String> names = db.table("names", Codec.STRING, Codec.STRING);
        db.write(txn -> {
            for (int i = 0; i < 20_000; i++) t.put(txn, i, i * 7);
            names.put(txn, "kiln", "lambda database");
            return null;
        }).join();
        // delete most rows: their pages become free pages, which a compacting copy leaves out
        db.write(txn -> {
            for (int i = 1_000; i < 20_000; i++) t.delete(txn, i);
            return null;
        }).join();

        Path copy = db.backup(tmp.resolve("backup"));

        assertEquals(tmp.resolve("backup").resolve("data.mdb"), copy);
        long original = Files.size(tmp.resolve("data").resolve("data.mdb"));
        assertTrue(Files.size(copy) < original / 2, () -> "compacted copy " + sizeOf(copy) + " bytes vs data.mdb " + original);
        assertEquals(List.of("data.mdb"), list(tmp.resolve("backup")), "the copy leaves nothing else, not even lock.mdb");
        db.close();

        try (Db restored = Db.open(tmp.resolve("backup"))) {
            Table<Integer, Integer> rt = restored.table("t", Codec.INT, Codec.INT);
            Table<String, String> rn = restored.table("names", Codec.STRING, Codec.STRING);
            assertEquals(1_000L, restored.read(txn -> rt.count(txn)).join());
            for (int i = 0; i < 1_000; i++) {
                int k = i;
                assertEquals(k * 7, restored.read(txn -> rt.get(txn, k)).join(), "row " + k);
            }
            assertEquals("lambda database", restored.read(txn -> rn.get(txn, "kiln")).join());
            // the restored copy is a working database: it takes writes
            put(restored, rt, 5, 55).join();
            assertEquals(55, restored.read(txn -> rt.get(txn, 5)).join());
        }
    }

    /**
     * Writers keep writing during the backup. Each of them writes its keys in order and waits for
     * each write to be durable before the next, so a consistent snapshot holds, per writer, exactly
     * its first k keys for some k: no gap. And k is at least the number of writes acknowledged before
     * the backup began.
     */
    @Test
    void aBackupDuringConcurrentWritesHoldsEveryAcknowledgedWriteAndNoGap() throws Exception {
        int writers = 4;
        db = Db.open(tmp.resolve("data"));
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        AtomicIntegerArray acknowledged = new AtomicIntegerArray(writers);
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        List<Future<?>> running = new ArrayList<>();
        int[] before = new int[writers];
        Path copy;
        try {
            for (int w = 0; w < writers; w++) {
                int writer = w;
                running.add(pool.submit(() -> {
                    for (int i = 0; !stop.get() && i < 1_000_000; i++) {
                        put(db, t, writer * 1_000_000 + i, i).join();
                        acknowledged.set(writer, i + 1);
                    }
                    return null;
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (minimum(acknowledged) < 200 && System.nanoTime() < deadline) Thread.sleep(5);
            for (int w = 0; w < writers; w++) before[w] = acknowledged.get(w);
            copy = db.backup(tmp.resolve("backup"));
            // the writers went on during the copy: the test really overlapped them
            int[] after = new int[writers];
            for (int w = 0; w < writers; w++) after[w] = acknowledged.get(w);
            assertTrue(sum(after) > sum(before), "no write was acknowledged while the backup ran");
        } finally {
            stop.set(true);
            pool.shutdown();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        }
        for (Future<?> f : running) f.get();
        assertTrue(java.util.Arrays.stream(before).min().getAsInt() >= 200, "writers made too little progress before the backup: " + java.util.Arrays.toString(before));

        db.close();
        try (Db restored = Db.open(copy.getParent())) {
            Table<Integer, Integer> rt = restored.table("t", Codec.INT, Codec.INT);
            List<TreeSet<Integer>> perWriter = new ArrayList<>();
            for (int w = 0; w < writers; w++) perWriter.add(new TreeSet<>());
            restored.read(txn -> rt.scan(txn, (k, v) -> {
                perWriter.get(k / 1_000_000).add(k % 1_000_000);
                return true;
            })).join();
            for (int w = 0; w < writers; w++) {
                TreeSet<Integer> keys = perWriter.get(w);
                int k = keys.size();
                int writer = w;
                assertTrue(k >= before[w], () -> "writer " + writer + ": " + before[writer] + " writes acknowledged before the backup,"
                    + " the copy holds " + k);
                assertTrue(k == 0 || keys.last() == k - 1, () -> "writer " + writer + ": the copy has a gap, " + k + " keys up to " + keys.last());
            }
        }
    }

    @Test
    void aTargetThatIsNotAnEmptyDirectoryIsRefusedAndLeftAlone() throws Exception {
        db = Db.open(tmp.resolve("data"));
        Path full = Files.createDirectories(tmp.resolve("full"));
        Files.writeString(full.resolve("notes.txt"), "keep me");
        DbException.BackupFailed e = assertThrows(DbException.BackupFailed.class, () -> db.backup(full));
        assertTrue(e.getMessage().contains("is not empty"), e.getMessage());
        assertEquals(List.of("notes.txt"), list(full));

        Path file = Files.writeString(tmp.resolve("a-file"), "x");
        e = assertThrows(DbException.BackupFailed.class, () -> db.backup(file));
        assertTrue(e.getMessage().contains("not a directory"), e.getMessage());

        e = assertThrows(DbException.BackupFailed.class, () -> db.backup(tmp.resolve("data")));
        assertTrue(e.getMessage().contains("data directory itself"), e.getMessage());

        // an existing empty directory is fine
        Path empty = Files.createDirectories(tmp.resolve("empty"));
        assertTrue(Files.size(db.backup(empty)) > 0);
    }

    @Test
    void aFailedCopyLeavesNothingBehind() throws Exception {
        db = Db.open(tmp.resolve("data"));
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        put(db, t, 1, 1).join();
        Path readOnly = Files.createDirectories(tmp.resolve("ro"));
        assertTrue(readOnly.toFile().setWritable(false, false));
        try {
            org.junit.jupiter.api.Assumptions.assumeFalse(Files.isWritable(readOnly),
                "running as root: a directory without write permission is still writable, so the copy cannot be made to fail this way");
            DbException.BackupFailed e = assertThrows(DbException.BackupFailed.class, () -> db.backup(readOnly));
            assertTrue(e.getMessage().contains("failed"), e.getMessage());
            assertEquals(List.of(), list(readOnly));
        } finally {
            readOnly.toFile().setWritable(true, false);
        }
    }

    @Test
    void aClosedDatabaseIsNotBackedUp() {
        db = Db.open(tmp.resolve("data"));
        db.close();
        assertThrows(DbException.Closed.class, () -> db.backup(tmp.resolve("b")));
        assertFalse(Files.exists(tmp.resolve("b").resolve("data.mdb")));
        assertFalse(Files.exists(tmp.resolve("b")), "the directory the backup created is removed again");
    }

    private static List<String> list(Path dir) throws Exception {
        try (var s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static long sizeOf(Path p) {
        try {
            return Files.size(p);
        } catch (java.io.IOException e) {
            return -1;
        }
    }

    private static int minimum(AtomicIntegerArray a) {
        int min = Integer.MAX_VALUE;
        for (int i = 0; i < a.length(); i++) min = Math.min(min, a.get(i));
        return min;
    }

    private static int sum(int[] a) {
        int s = 0;
        for (int x : a) s += x;
        return s;
    }

    /**
     * LMDB's copy begins its own read transaction, outside the snapshot guard; a backup proves it is
     * at least as new as its start by holding the mark it committed first.
     */
    @Test
    void aCopyOlderThanTheBackupsStartIsNotABackup() throws Exception {
        db = Db.open(tmp.resolve("data"));
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        db.write(txn -> { t.put(txn, 1, 1); return null; }).join();
        Path first = db.backup(tmp.resolve("first")).getParent();
        Path second = db.backup(tmp.resolve("second")).getParent();
        assertEquals(1, LmdbBackup.verify(first), "the first backup's mark");
        assertEquals(2, LmdbBackup.verify(second), "each backup commits a newer mark");
        DbException.BackupFailed stale = assertThrows(DbException.BackupFailed.class, () -> LmdbBackup.finish(first, 2));
        assertTrue(stale.getMessage().contains("older snapshot than the backup's start"), stale.getMessage());
    }
}

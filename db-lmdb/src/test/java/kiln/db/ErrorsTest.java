package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Random;
import java.util.concurrent.CompletionException;

import kiln.db.lmdb.LmdbEngine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each failure of the database itself arrives as its own {@link DbException} subtype. */
class ErrorsTest {
    @TempDir Path dir;

    private static Throwable failure(QueryFuture<?> f) {
        assertTrue(f.isDone(), "a refused query's future is completed at once");
        return assertThrows(CompletionException.class, f::join).getCause();
    }

    @Test
    void writeAfterCloseIsClosed() {
        Db db = Db.open(dir);
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        db.close();
        assertInstanceOf(DbException.Closed.class, failure(db.write(txn -> { t.put(txn, 1, 1); return null; })));
    }

    @Test
    void readAfterCloseIsClosed() {
        Db db = Db.open(dir);
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        db.close();
        assertInstanceOf(DbException.Closed.class, failure(db.read(txn -> t.get(txn, 1))));
    }

    @Test
    void tableAfterCloseIsClosed() {
        Db db = Db.open(dir);
        db.close();
        assertThrows(DbException.Closed.class, () -> db.table("t", Codec.INT, Codec.INT));
    }

    @Test
    void dataDirectoryThatIsARegularFileIsDataDirectoryError() throws IOException {
        Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
        assertThrows(DbException.DataDirectory.class, () -> Db.open(file));
    }

    @Test
    void dataDirectoryUnderARegularFileIsDataDirectoryError() throws IOException {
        // cannot be created by anyone, root included (ENOTDIR), unlike a chmod'ed directory
        Path file = Files.writeString(dir.resolve("plain-file"), "x");
        assertThrows(DbException.DataDirectory.class, () -> Db.open(file.resolve("data")));
    }

    @Test
    void readOnlyDataDirectoryIsDataDirectoryError() throws IOException {
        Path ro = Files.createDirectory(dir.resolve("ro"));
        Files.setPosixFilePermissions(ro, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            // root (as in CI) ignores permission bits; /proc refuses new files to everyone
            Path unwritable = canCreateFileIn(ro) ? Path.of("/proc") : ro;
            DbException.DataDirectory e = assertThrows(DbException.DataDirectory.class, () -> Db.open(unwritable));
            assertTrue(e.getMessage().contains(unwritable.toString()), e.getMessage());
        } finally {
            Files.setPosixFilePermissions(ro, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    private static boolean canCreateFileIn(Path directory) {
        try {
            Files.delete(Files.createFile(directory.resolve("probe")));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void garbageDataFileIsCorrupt() throws IOException {
        byte[] garbage = new byte[64 << 10];
        new Random(42).nextBytes(garbage);
        Files.write(dir.resolve("data.mdb"), garbage);
        DbException.Corrupt e = assertThrows(DbException.Corrupt.class, () -> Db.open(dir));
        assertTrue(e.getMessage().contains(dir.toAbsolutePath().toString()), e.getMessage());
    }

    @Test
    void truncatedDataFileIsCorrupt() throws IOException {
        Files.write(dir.resolve("data.mdb"), new byte[] {1, 2, 3});
        assertThrows(DbException.Corrupt.class, () -> Db.open(dir));
    }

    @Test
    void fullWriteQueueIsOverloaded() throws Exception {
        try (Db db = Db.builder(dir).queueCapacity(1).open()) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            QueryFuture<Object> queued;
            QueryFuture<Object> refused;
            WriterGate gate = new WriterGate(db);
            try {
                queued = db.write(txn -> { t.put(txn, 1, 1); return null; });
                refused = db.write(txn -> { t.put(txn, 2, 2); return null; });
                assertInstanceOf(DbException.Overloaded.class, failure(refused));
            } finally {
                gate.open();
            }
            queued.join();
            // the queue drained: writes are accepted again
            db.write(txn -> { t.put(txn, 3, 3); return null; }).join();
            assertEquals(2L, db.read(t::count).join());
        }
    }

    /** Reads beyond the reader slots wait for one, up to readerWait, then fail naming the limit and its flag. */
    @Test
    void readsBeyondTheReaderSlotsWaitThenFailNamingTheLimit() throws Exception {
        try (Db db = Db.builder(LmdbEngine.builder(dir).maxReaders(LmdbEngine.RESERVED_READERS + 4).readerWait(java.time.Duration.ofMillis(300)).open()).open()) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            assertEquals(4, db.stats().readSlots);
            java.util.concurrent.CountDownLatch holding = new java.util.concurrent.CountDownLatch(4);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.ExecutorService readers = java.util.concurrent.Executors.newFixedThreadPool(5);
            try {
                for (int i = 0; i < 4; i++) {
                    readers.submit(() -> db.read(txn -> {
                        holding.countDown();
                        return release.await(30, java.util.concurrent.TimeUnit.SECONDS);
                    }).join());
                }
                assertTrue(holding.await(30, java.util.concurrent.TimeUnit.SECONDS));
                DbStats busy = db.stats();
                assertEquals(4, busy.readTxnsInUse, busy.toString());
                DbException.ReadersFull full = assertInstanceOf(DbException.ReadersFull.class, failure(db.read(txn -> t.get(txn, 1))));
                assertTrue(full.getMessage().contains("all 4 read slots") && full.getMessage().contains("--db-max-readers"), full.getMessage());
                // one that waits gets a slot as soon as a read ends
                java.util.concurrent.Future<Integer> waiting = readers.submit(() -> db.read(txn -> t.get(txn, 1, 7)).join());
                Thread.sleep(50);
                release.countDown();
                assertEquals(7, waiting.get(30, java.util.concurrent.TimeUnit.SECONDS));
            } finally {
                release.countDown();
                readers.shutdown();
            }
            assertTrue(readers.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS), "the readers did not end");
            DbStats idle = db.stats();
            assertEquals(0, idle.readTxnsInUse, idle.toString());
            assertTrue(idle.readTxnsPooled <= idle.readSlots, idle.toString());
        }
    }
}

package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import kiln.db.lmdb.LmdbEngine;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One process writes an LMDB database at a time: a second writer (a second server, {@code kiln db
 * load}) is refused naming the directory and the holder, in another process or this one; the lock
 * goes with the process however it ends; a read-only open reads beside the writer and writes nothing.
 */
class LockTest {
    @TempDir Path dir;
    private Process writer;

    @AfterEach
    void stopWriter() throws Exception {
        if (writer != null && writer.isAlive()) {
            writer.destroyForcibly();
            writer.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** Starts {@link WriterMain} on {@code dir} and waits for its READY line. */
    private Process startWriter() throws Exception {
        writer = new ProcessBuilder(ChildJvm.command(WriterMain.class, dir.toString())).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8));
        assertEquals("READY", out.readLine(), "the writer's first line");
        return writer;
    }

    @Test
    void aSecondWriterProcessIsRefusedNamingTheDirectoryAndTheHolder() throws Exception {
        Process p = startWriter();
        DbException.InUse e = assertThrows(DbException.InUse.class, () -> LmdbEngine.open(dir));
        assertTrue(e.getMessage().contains(dir.toAbsolutePath().toString()), e.getMessage());
        assertTrue(e.getMessage().contains("process " + p.pid()), e.getMessage());
        assertTrue(e.getMessage().contains("kiln db"), e.getMessage());
    }

    @Test
    void theLockGoesWithTheProcessHoweverItEnds() throws Exception {
        startWriter().destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        try (Db db = Db.open(dir)) {
            Table<Integer, String> t = db.table("t", Codec.INT, Codec.STRING);
            assertEquals("one", db.read(txn -> t.get(txn, 1)).join());
        }
    }

    @Test
    void aSecondWriterInThisProcessIsRefusedAndTheFirstKeepsItsLock() throws Exception {
        try (LmdbEngine first = LmdbEngine.open(dir)) {
            DbException.InUse e = assertThrows(DbException.InUse.class, () -> LmdbEngine.open(dir));
            assertTrue(e.getMessage().contains("open already in this process"), e.getMessage());
            assertThrows(DbException.InUse.class, () -> LmdbEngine.open(dir.resolve(".")), "the same directory by another path");
            assertTrue(Files.exists(dir.resolve(LmdbEngine.LOCK_FILE)));
        }
        LmdbEngine.open(dir).close();  // closed: the lock is free again
    }

    @Test
    void aReadOnlyOpenReadsBesideTheWriterAndWritesNothing() throws Exception {
        Process p = startWriter();
        try (LmdbEngine ro = LmdbEngine.builder(dir).readOnly().open()) {
            assertTrue(ro.isReadOnly());
            try (KvTxn txn = ro.beginRead()) {
                assertTrue(ro.spaceNames(txn).contains("t"), "spaces: " + ro.spaceNames(txn));
                KvSpace t = ro.space(txn, "t", false);
                ByteBuffer v = txn.get(t, ByteBuffer.allocateDirect(4).putInt(1 ^ Integer.MIN_VALUE).flip());
                assertEquals("one", StandardCharsets.UTF_8.decode(v).toString());
            }
            try (KvTxn txn = ro.beginRead()) {  // a space opened in an earlier read transaction stays open
                assertEquals(1, txn.count(ro.space(txn, "t", false)));
            }
            assertThrows(IllegalStateException.class, ro::beginWrite);
        }
        p.getOutputStream().close();  // the writer closes its database and exits normally
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue());
    }

    @Test
    void aReadOnlyOpenOfNoDatabaseIsRefusedAndCreatesNothing() {
        Path none = dir.resolve("none");
        DbException.DataDirectory e = assertThrows(DbException.DataDirectory.class, () -> LmdbEngine.builder(none).readOnly().open());
        assertTrue(e.getMessage().contains("no database in " + none.toAbsolutePath()), e.getMessage());
        assertFalse(Files.exists(none));
        assertThrows(DbException.DataDirectory.class, () -> LmdbEngine.builder(dir).readOnly().open(), "a directory without data.mdb");
        assertFalse(Files.exists(dir.resolve("lock.mdb")));
    }

    @Test
    void withoutTheLockABackupWritesBesideTheWriter() throws Exception {
        startWriter();
        try (Db db = Db.open("lmdb:" + dir + "?lock=false")) {
            Path copy = db.backup(dir.resolve("backup"));
            assertTrue(Files.size(copy) > 0);
        }
    }
}

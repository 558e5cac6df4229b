package kiln.powercut;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.Table;

/**
 * Disk failures injected under the database by the power-cut filesystem: an fsync that fails with
 * EIO (and, as Linux does since "fsyncgate", drops the unwritten pages so that a retried fsync would
 * report success), and a failed write of LMDB's meta page (after which LMDB panics). Either makes
 * the database fatal; a server exits with status 74.
 */
class DiskFaultsTest {
    @TempDir Path dir;
    Layer layer;

    @BeforeEach
    void mount() throws Exception {
        layer = Layer.mount(Path.of(System.getProperty("kiln.powercut.fs", "fs/powercutfs.py")), dir.resolve("backing"), dir.resolve("mnt"));
    }

    @AfterEach
    void unmount() throws Exception {
        if (layer != null) layer.close();
    }

    private void failsFatal(String fault, String cause) throws Exception {
        Db db = Db.open(dir.resolve("mnt"));
        try {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            db.write(txn -> { t.put(txn, 1, 1); return null; }).join();
            assertTrue(layer.command(fault).startsWith("ok"));
            Throwable first = assertThrows(CompletionException.class, () -> db.write(txn -> { t.put(txn, 2, 2); return null; }).join()).getCause();
            DbException.Fatal fatal = assertInstanceOf(DbException.Fatal.class, first);
            assertTrue(fatal.getMessage().contains(cause), fatal.getMessage());
            assertTrue(layer.command("heal").startsWith("ok"));
            assertSame(fatal, assertThrows(CompletionException.class, () -> db.write(txn -> { t.put(txn, 3, 3); return null; }).join()).getCause(),
                "healed or not, this process does not write again: a retried fsync could report lost data as durable");
            assertSame(fatal, assertThrows(CompletionException.class, () -> db.read(txn -> t.get(txn, 1)).join()).getCause());
            assertFalse(db.health().isOk());
            assertEquals(fatal.getMessage(), db.health().problem());
        } finally {
            db.close();
        }
        // what a restart finds: the last commit that reached the disk, and a database that works
        try (Db reopened = Db.open(dir.resolve("mnt"))) {
            Table<Integer, Integer> t = reopened.table("t", Codec.INT, Codec.INT);
            assertEquals(1, reopened.read(txn -> t.get(txn, 1)).join());
            reopened.write(txn -> { t.put(txn, 4, 4); return null; }).join();
            reopened.verify();
        }
    }

    @Test
    void anFsyncThatFailsWithEioMakesTheDatabaseFatal() throws Exception {
        failsFatal("fail-fsync 1", "I/O error (EIO)");
    }

    @Test
    void aFailedMetaPageWriteMakesTheDatabaseFatal() throws Exception {
        failsFatal("fail-writes data.mdb 0 8192", "I/O error (EIO)");
    }

    /** The launcher every front end runs: a database that turns fatal stops the process with status 74. */
    @Test
    void aServerWhoseDatabaseTurnsFatalExitsWithStatus74() throws Exception {
        Path stderr = dir.resolve("server.stderr");
        List<String> cmd = new ArrayList<>(ChildJvm.command(FatalServerMain.class));
        cmd.add(dir.resolve("mnt").toString());
        Process server = new ProcessBuilder(cmd).redirectError(stderr.toFile()).start();
        try {
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(server.getInputStream()));
            String ready = out.readLine();
            assertTrue(ready != null && ready.contains("listening"), ready + " " + Files.readString(stderr));
            assertTrue(layer.command("fail-fsync 1").startsWith("ok"));
            assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the server did not exit");
            assertEquals(74, server.exitValue(), Files.readString(stderr));
            String err = Files.readString(stderr);
            assertTrue(err.contains("is unusable: writing or syncing the data file failed with an I/O error (EIO)")
                && err.contains("stopping (exit status 74)"), err);
        } finally {
            server.destroyForcibly();
        }
    }
}

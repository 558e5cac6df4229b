package kiln.db.lmdb;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

import org.lmdbjava.CopyFlags;
import org.lmdbjava.Dbi;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.LmdbException;

import kiln.db.Codec;
import kiln.db.DbException;
import kiln.db.KvEngine;

/**
 * The steps of {@link LmdbEngine#backup} around LMDB's own copy: checking the target, making the
 * copy durable, and reading it back before calling it a backup.
 *
 * <p>{@code mdb_env_copy2(MDB_CP_COMPACT)} copies the snapshot of one read transaction, so it runs
 * beside readers and the writer; a second process may run it on a live environment too (LMDB shares
 * the lock file and reader table between processes). Its output is page-for-page rebuilt: free
 * pages are left out and every table's pages renumbered. Source: the LMDB API docs,
 * mdb_env_copy2, http://www.lmdb.tech/doc/group__mdb.html
 */
final class LmdbBackup {
    /** The file LMDB writes into the target directory. */
    static final String DATA_FILE = "data.mdb";

    private LmdbBackup() {
    }

    /**
     * @throws DbException.BackupFailed when {@code target} is a file, or a directory that is not empty
     * @return true if this call created {@code target}
     */
    static boolean prepareTarget(Path target, Path source) {
        Path abs = target.toAbsolutePath().normalize();
        if (abs.equals(source.toAbsolutePath().normalize())) {
            throw new DbException.BackupFailed("backup directory " + abs + " is the data directory itself; choose another", null);
        }
        if (Files.exists(abs)) {
            if (!Files.isDirectory(abs)) {
                throw new DbException.BackupFailed("backup target " + abs + " exists and is not a directory", null);
            }
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(abs)) {
                if (entries.iterator().hasNext()) {
                    throw new DbException.BackupFailed("backup directory " + abs + " is not empty; give a new or empty directory", null);
                }
            } catch (IOException e) {
                throw new DbException.BackupFailed("cannot read backup directory " + abs + ": " + e, e);
            }
            return false;
        }
        try {
            Files.createDirectories(abs);
            return true;
        } catch (IOException e) {
            throw new DbException.BackupFailed("cannot create backup directory " + abs + ": " + e, e);
        }
    }

    /** Runs LMDB's compacting copy of {@code env} into the empty directory {@code target}. */
    static void copy(Env<ByteBuffer> env, Path target) {
        // Free the reader slots of processes that died holding one (a killed earlier backup, say):
        // a stale slot would keep the writer from reusing any page freed since.
        env.readerCheck();
        env.copy(target.toFile(), CopyFlags.MDB_CP_COMPACT);
    }

    /**
     * Flushes the copy to disk (file and directory entry) and reads it back: every table, every
     * entry, each table's entry count against the count its header records, and the backup mark
     * written before the copy. A copy that LMDB cannot walk, whose counts disagree or that lacks the
     * mark (a snapshot older than the backup's start) is not a backup.
     *
     * @param mark the mark committed before the copy began; the copy must hold it or a newer one
     * @return the size of the copy in bytes
     * @throws DbException.BackupFailed naming what did not check out
     */
    static long finish(Path target, long mark) {
        Path file = target.resolve(DATA_FILE);
        try {
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ch.force(true);
            }
            try (FileChannel dir = FileChannel.open(target, StandardOpenOption.READ)) {
                dir.force(true);
            }
        } catch (IOException e) {
            throw new DbException.BackupFailed("cannot flush the backup " + file + " to disk: " + e, e);
        }
        long held = verify(target);
        if (held < mark) {
            throw new DbException.BackupFailed("backup " + target + " holds an older snapshot than the backup's start (backup mark "
                + held + ", written before the copy: " + mark + "); run the backup again", null);
        }
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw new DbException.BackupFailed("cannot read the size of " + file + ": " + e, e);
        }
    }

    /**
     * Opens the copy read-only without a lock file and walks every entry of every table.
     *
     * @return the backup mark the copy holds, 0 for none
     */
    static long verify(Path target) {
        long mark = 0;
        LmdbLibrary.load();
        // MDB_NOLOCK + MDB_RDONLY_ENV: nothing is written into the backup directory, not even lock.mdb
        try (Env<ByteBuffer> copy = Env.create().setMaxDbs(1024).setMapSize(Files.size(target.resolve(DATA_FILE)) + (1 << 20))
                .open(target.toFile(), EnvFlags.MDB_NOLOCK, EnvFlags.MDB_RDONLY_ENV, EnvFlags.MDB_NOTLS)) {
            List<byte[]> names = copy.getDbiNames();
            for (byte[] name : names) {
                Dbi<ByteBuffer> dbi = copy.openDbi(name);
                try (org.lmdbjava.Txn<ByteBuffer> txn = copy.txnRead()) {
                    String table = new String(name, java.nio.charset.StandardCharsets.UTF_8);
                    Walk.table(table, dbi, txn);
                    if (KvEngine.BACKUP_MARKS.equals(table)) mark = markIn(dbi, txn);
                }
            }
        } catch (DbException e) {
            throw e;
        } catch (IllegalStateException e) {
            throw new DbException.BackupFailed("backup " + target + " is inconsistent: " + e.getMessage(), e);
        } catch (IOException | LmdbException e) {
            throw new DbException.BackupFailed("backup " + target + " does not read back as an LMDB database: " + e.getMessage(), e);
        }
        return mark;
    }

    private static long markIn(Dbi<ByteBuffer> marks, org.lmdbjava.Txn<ByteBuffer> txn) {
        ByteBuffer key = ByteBuffer.allocateDirect(KvEngine.BACKUP_MARK_KEY.length());
        Codec.STRING.write(KvEngine.BACKUP_MARK_KEY, key);
        ByteBuffer found = marks.get(txn, key.flip());
        return found == null ? 0 : Codec.LONG.read(found.order(java.nio.ByteOrder.BIG_ENDIAN));
    }

    /** Removes what a failed backup left: the partial copy, and the directory if the backup created it. */
    static void discard(Path target, boolean created) {
        try {
            Files.deleteIfExists(target.resolve(DATA_FILE));
            if (created) Files.deleteIfExists(target);
        } catch (IOException ignored) {
            // the failure being reported matters more than the leftover
        }
    }
}

package kiln.db.lmdb;

import java.io.IOException;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.StandardOpenOption;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.lmdbjava.Cursor;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.GetOp;
import org.lmdbjava.LmdbException;
import org.lmdbjava.LmdbNativeException;

import kiln.db.DbException;
import kiln.db.DbStats;
import kiln.db.Keys;
import kiln.db.KvEngine;
import kiln.db.KvCursor;
import kiln.db.KvSpace;
import kiln.db.KvStats;
import kiln.db.KvTxn;
import kiln.db.Table;

/**
 * The {@link KvEngine} on LMDB (through lmdbjava): one memory-mapped file, a space per LMDB
 * database ("DBI"), read transactions pooled and renewed, durable commits (fsync), nested write
 * transactions for the writer's batches: kiln's embedded engine, {@code lmdb:DIR} or a bare
 * directory to {@link kiln.db.KvEngines} ({@link LmdbEngineProvider}), or opened with settings of
 * its own:
 *
 * <pre>{@code
 * Db db = Db.builder(LmdbEngine.builder(Path.of("data")).maxMapSize(1L << 30).open()).open();
 * }</pre>
 *
 * <h2>Reads never go back in time</h2>
 * A read transaction begun after another sees a snapshot at least as new. LMDB's begin
 * (mdb_txn_begin/renew) reads the last committed txn id, then copies the meta page of that id's
 * parity, which the writer's next-but-one commit rewrites; so a begin that overlapped the end of a
 * commit ({@link #metaEpoch} moved while it ran) begins again. A begin that overlapped no commit end
 * cannot have met that rewrite. {@code ReadConsistencyTest} guards it.
 *
 * <h2>One writer process</h2>
 * LMDB lets many processes write one environment, one at a time, but kiln's writer keeps what it
 * knows in memory (the change feeds' numbers, the indexes' build state, the epoch above) and every
 * commit must go through it: a second server on the same directory, or a tool loading into it, would
 * write behind its back. So an engine opened to write holds an exclusive lock on the file
 * {@value #LOCK_FILE} in the directory, from its open to its close ({@link FileChannel#tryLock}, an
 * {@code fcntl} lock the kernel lets go when the process ends, however it ends), and a second writer
 * is refused with {@link DbException.InUse} naming the directory and the process that holds it.
 * Beside it, a process may open the directory {@linkplain Builder#readOnly read-only} (MDB_RDONLY,
 * no lock: {@code kiln db stat}, {@code dump}), or {@linkplain Builder#withoutLock without the lock}
 * to write only what the writer never reads (a backup's mark, {@code --backup}).
 *
 * <h2>Reader slots</h2>
 * LMDB's reader table has {@code maxReaders} slots; {@value #RESERVED_READERS} are left to other
 * processes (a backup, an inspection) and the rest are permits over this process's read
 * transactions, in use and pooled. A read that finds none free waits up to {@code readerWait}.
 *
 * <p>Source for the LMDB rules relied on here: the LMDB API docs (mdb_txn_begin, MDB_NOTLS,
 * mdb_env_set_mapsize, mdb_env_copy2), http://www.lmdb.tech/doc/group__mdb.html
 */
public final class LmdbEngine implements KvEngine {
    /** Reader slots left to other processes on the same data: a backup, an inspection. */
    public static final int RESERVED_READERS = 8;
    /** The file in the data directory whose lock an engine opened to write holds: {@value}. */
    public static final String LOCK_FILE = "kiln.lock";
    /**
     * The directories this process holds the lock of (real paths): a second open in the same process
     * is refused without opening the lock file, whose close would let go of the first one's lock
     * (POSIX locks belong to the process, and any close of the file releases them).
     */
    private static final Set<Path> LOCKED = ConcurrentHashMap.newKeySet();
    private final Path dir;
    /** Opened with {@link Builder#readOnly}: MDB_RDONLY, no lock, writes refused. */
    private final boolean readOnly;
    /** The lock file's channel, holding its lock; null when none is held (read-only, or without the lock). */
    private final FileChannel lock;
    /** The real path {@link #LOCKED} holds for this engine; null when it holds no lock. */
    private final Path lockedDir;
    private final Env<ByteBuffer> env;
    private final ConcurrentLinkedQueue<org.lmdbjava.Txn<ByteBuffer>> idleReadTxns = new ConcurrentLinkedQueue<>();
    private final AtomicInteger idleReadCount = new AtomicInteger();
    private final int maxIdleReadTxns;
    /** A permit per reader slot this process may hold: a read transaction, in use or pooled, holds one from its open to its close. */
    private final Semaphore readSlots;
    private final int readSlotCount;
    private final long readerWaitNanos;
    /** Map size in bytes (the ceiling, mapped at open), kept so that {@link #stats} never calls into a closing environment. */
    private final long mapSize;
    private final long pageSize;
    /** Bumped after every attempt to commit a top-level write transaction, i.e. after LMDB may have written a meta page. */
    private volatile long metaEpoch;
    /** Bytes of the map up to the last page the last commit used; see {@link DbStats#usedBytes}. */
    private volatile long usedBytes;

    private LmdbEngine(Builder b) {
        this.dir = b.dir;
        this.readOnly = b.readOnly;
        if (b.readOnly) {
            checkReadable(b.dir);
            this.lockedDir = null;
            this.lock = null;
        } else {
            createDirectory(b.dir);
            if (b.lock) {
                this.lockedDir = realPath(b.dir);
                this.lock = lock(b.dir, lockedDir);
            } else {
                this.lockedDir = null;
                this.lock = null;
            }
        }
        try {
            EnvFlags[] flags = b.extraFlags;
            if (b.readOnly) {
                flags = java.util.Arrays.copyOf(flags, flags.length + 1);
                flags[flags.length - 1] = EnvFlags.MDB_RDONLY_ENV;
            }
            this.env = openEnv(b.dir, b.maxMapSize, b.readOnly && !b.maxTablesSet ? READ_ONLY_MAX_TABLES : b.maxTables, b.maxReaders, flags);
        } catch (RuntimeException e) {
            unlock();
            throw e;
        }
        this.mapSize = env.info().mapSize;
        this.pageSize = env.stat().pageSize;
        this.usedBytes = usedBytesNow();
        this.readSlotCount = b.maxReaders - RESERVED_READERS;
        this.readSlots = new Semaphore(readSlotCount);
        this.readerWaitNanos = b.readerWaitNanos;
        this.maxIdleReadTxns = Math.max(1, readSlotCount / 2);
    }

    /** The tables a read-only engine may open unless told otherwise: a tool reads every one there is. */
    private static final int READ_ONLY_MAX_TABLES = 1024;

    /**
     * Takes the writers' lock of {@code dir} ({@value #LOCK_FILE}) and writes this process's id into
     * its file, for the message a second writer gets.
     *
     * @throws DbException.InUse when another process, or this one, holds it
     * @throws DbException.DataDirectory when the lock file cannot be made
     */
    private static FileChannel lock(Path dir, Path real) {
        if (!LOCKED.add(real)) {
            throw new DbException.InUse("the database in " + dir.toAbsolutePath() + " is open already in this process: open it"
                + " once and share it (LMDB: never twice in one process)", null);
        }
        Path file = dir.resolve(LOCK_FILE);
        FileChannel channel = null;
        try {
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock held = channel.tryLock();
            if (held == null) {
                String holder = holder(channel);
                channel.close();
                LOCKED.remove(real);
                throw new DbException.InUse("the database in " + dir.toAbsolutePath() + " is open by another process that writes it ("
                    + holder + ": a kiln server, or kiln db load); LMDB's data has one writer process at a time. Beside it, read it"
                    + " (kiln db stat|get|range|dump|verify " + dir + ") or back it up (--backup DIR); to write it, stop that process first", null);
            }
            channel.truncate(0);
            channel.write(ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII)), 0);
            return channel;
        } catch (IOException e) {
            try {
                if (channel != null) channel.close();
            } catch (IOException ignored) {
                // the failure to report is the first
            }
            LOCKED.remove(real);
            throw new DbException.DataDirectory("cannot take the lock " + file.toAbsolutePath() + " (writers of the database take it): " + e, e);
        }
    }

    /** @return "process N", as the holder wrote it into the lock file, or "a process" */
    private static String holder(FileChannel channel) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(32);
        channel.read(b, 0);
        String pid = new String(b.array(), 0, b.position(), StandardCharsets.US_ASCII).trim();
        return pid.matches("[0-9]{1,19}") ? "process " + pid : "a process";
    }

    /** Lets go of the writers' lock, if this engine holds it. */
    private void unlock() {
        if (lock == null) return;
        try {
            lock.close();  // and its lock with it
        } catch (IOException ignored) {
            // closing the descriptor releases the lock whatever close reports
        } finally {
            LOCKED.remove(lockedDir);
        }
    }

    private static Path realPath(Path dir) {
        try {
            return dir.toRealPath();
        } catch (IOException e) {
            throw new DbException.DataDirectory("cannot resolve data directory " + dir.toAbsolutePath() + ": " + e, e);
        }
    }

    /**
     * LMDB with settings of its own, for {@link kiln.db.Db#builder(KvEngine)}:
     * {@code LmdbEngine.builder(dir).maxMapSize(1L << 30).open()} caps the data at 1 GiB. The
     * settings a URL may carry ({@code lmdb:DIR?maxReaders=N}) are these too.
     *
     * @param dir the data directory: {@code data.mdb}, {@code lock.mdb} and the writers' lock {@value #LOCK_FILE} go in it
     * @return settings for an engine in the directory {@code dir}, created if missing
     */
    public static Builder builder(Path dir) {
        return new Builder(dir);
    }

    /** Opens the engine in {@code dir} with default settings. */
    public static LmdbEngine open(Path dir) {
        return builder(dir).open();
    }

    /** @return the data directory, absolute */
    @Override
    public String location() {
        return dir.toAbsolutePath().toString();
    }

    /** A space: an LMDB database in the environment. */
    private record Space(String name, Dbi<ByteBuffer> dbi) implements KvSpace {
    }

    @Override
    public KvSpace space(KvTxn txn, String name, boolean create) {
        org.lmdbjava.Txn<ByteBuffer> t = ((LmdbTxn) txn).lmdb;
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        try {
            return new Space(name, create ? env.openDbi(t, bytes, null, false, DbiFlags.MDB_CREATE) : env.openDbi(t, bytes, null, false));
        } catch (Dbi.KeyNotFoundException e) {
            if (!create) return null;  // MDB_NOTFOUND: no such database
            throw ((LmdbTxn) txn).failure(e);
        } catch (LmdbException e) {
            throw ((LmdbTxn) txn).failure(e);
        }
    }

    @Override
    public List<String> spaceNames(KvTxn txn) {
        List<String> names = new ArrayList<>();
        org.lmdbjava.Txn<ByteBuffer> t = ((LmdbTxn) txn).lmdb;
        // the main database's keys are the names of the others (it holds nothing else in kiln)
        Dbi<ByteBuffer> main = env.openDbi(t, null, null, false);
        try (Cursor<ByteBuffer> c = main.openCursor(t)) {
            for (boolean more = c.first(); more; more = c.next()) {
                names.add(StandardCharsets.UTF_8.decode(c.key()).toString());
            }
        } catch (LmdbException e) {
            throw ((LmdbTxn) txn).failure(e);
        }
        return names;
    }

    @Override
    public KvTxn beginRead() {
        return new LmdbTxn(acquireReadTxn(), true, false);
    }

    /** @throws IllegalStateException when the engine was opened {@linkplain Builder#readOnly read-only} */
    @Override
    public KvTxn beginWrite() {
        if (readOnly) throw new IllegalStateException("the database in " + dir.toAbsolutePath() + " is open read-only");
        return new LmdbTxn(env.txnWrite(), false, true);
    }

    /** @return whether it was opened {@linkplain Builder#readOnly read-only} */
    public boolean isReadOnly() {
        return readOnly;
    }

    @Override
    public long verify(KvTxn txn, KvSpace space) {
        return Walk.table(space.name(), ((Space) space).dbi, ((LmdbTxn) txn).lmdb);
    }

    @Override
    public Path backup(Path target, long mark) {
        boolean created = LmdbBackup.prepareTarget(target, dir);
        try {
            try {
                LmdbBackup.copy(env, target);
            } catch (LmdbException e) {
                throw new DbException.BackupFailed("backup of " + dir.toAbsolutePath() + " into " + target.toAbsolutePath()
                    + " failed: " + e.getMessage(), e);
            }
            LmdbBackup.finish(target, mark);
            return target.resolve(LmdbBackup.DATA_FILE);
        } catch (RuntimeException e) {
            LmdbBackup.discard(target, created);
            throw e;
        }
    }

    /** @return a count that changes after every commit attempt; for {@code ReadConsistencyTest} */
    public long metaEpoch() {
        return metaEpoch;
    }

    @Override
    public KvStats stats() {
        int pooled = Math.max(0, idleReadCount.get());
        int inUse = Math.max(0, readSlotCount - readSlots.availablePermits() - pooled);
        // read-only, the writer is another process: what its last commit used, read now
        return new KvStats(mapSize, readOnly ? usedBytesNow() : usedBytes, inUse, pooled, readSlotCount);
    }

    /** Closes the environment, then lets go of the writers' lock, whatever the close met (a fatal environment's). */
    @Override
    public void close() {
        try {
            org.lmdbjava.Txn<ByteBuffer> t;
            while ((t = idleReadTxns.poll()) != null) {
                idleReadCount.decrementAndGet();
                closeResetReadTxn(t);
                readSlots.release();
            }
            env.close();
        } finally {
            unlock();
        }
    }

    /**
     * @return why LMDB refuses, or may serve wrong data to, every later transaction after {@code e};
     *         null when {@code e} is not such an error. Source: mdb.c (LMDB 0.9), which sets
     *         MDB_FATAL_ERROR when a meta-page write fails and then answers MDB_PANIC.
     */
    @Override
    public String fatalCause(RuntimeException e) {
        if (e instanceof LmdbNativeException.PanicException) {
            return "LMDB panicked (MDB_PANIC): an earlier meta-page write failed, so it refuses every transaction";
        }
        if (e instanceof LmdbNativeException.PageCorruptedException || e instanceof LmdbNativeException.PageNotFoundException
                || e instanceof CorruptedPage) {
            return "the data file is corrupted (" + e.getMessage() + ")";
        }
        if (e instanceof LmdbNativeException n && n.getResultCode() == EIO) {
            return "writing or syncing the data file failed with an I/O error (EIO): the disk may have lost writes"
                + " the kernel had reported written, so this process must not go on trusting it";
        }
        return null;
    }

    /** errno EIO (Linux, and every POSIX system kiln runs on). */
    private static final int EIO = 5;

    /** A transaction's first LMDB failure was MDB_BAD_TXN: a page LMDB could not read (see {@link LmdbTxn#failure}). */
    static final class CorruptedPage extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CorruptedPage(LmdbException e) {
            super("a transaction's first call was refused (MDB_BAD_TXN): LMDB could not read a table's record from the main database", e);
        }
    }

    /** @return the bytes of the map up to the last page in use (LMDB's last page number; freed pages below it are reused) */
    private long usedBytesNow() {
        return (env.info().lastPageNumber + 1) * pageSize;
    }

    /** Takes a read transaction from the pool (renewed) or opens one, on the newest committed snapshot; see the class comment. */
    private org.lmdbjava.Txn<ByteBuffer> acquireReadTxn() {
        org.lmdbjava.Txn<ByteBuffer> t = idleReadTxns.poll();
        if (t != null) {
            idleReadCount.decrementAndGet();
        } else if (!readSlots.tryAcquire()) {
            t = awaitReadSlot();
        }
        while (true) {
            long epoch = metaEpoch;
            try {
                if (t == null) {
                    t = env.txnRead();
                } else {
                    t.renew();
                }
            } catch (Env.ReadersFullException e) {
                readSlots.release();
                throw new DbException.ReadersFull("LMDB's reader table is full: other processes on " + dir + " hold slots this"
                    + " process counted on (it keeps " + RESERVED_READERS + " of maxReaders for them)", e);
            } catch (RuntimeException e) {
                if (t != null) t.close();
                readSlots.release();
                throw e;
            }
            VarHandle.acquireFence(); // the begin's loads of the meta page stay before the epoch load below
            if (metaEpoch == epoch) return t;
            t.reset();  // and renew() again; never close() a reset transaction (see closeResetReadTxn)
        }
    }

    /**
     * Every reader slot is held (reads in flight, and pooled transactions): waits, up to the reader
     * wait, for a pooled transaction or a slot. A virtual thread parks here; a platform thread
     * blocks, which on a Kilim carrier would take more concurrent reads than a server has carriers.
     *
     * @return a pooled transaction, or null once a slot is this caller's to open one with
     * @throws DbException.ReadersFull when none came free in time
     */
    private org.lmdbjava.Txn<ByteBuffer> awaitReadSlot() {
        long deadline = System.nanoTime() + readerWaitNanos;
        try {
            while (true) {
                org.lmdbjava.Txn<ByteBuffer> t = idleReadTxns.poll();
                if (t != null) {
                    idleReadCount.decrementAndGet();
                    return t;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) break;
                if (readSlots.tryAcquire(Math.min(left, 10_000_000L), TimeUnit.NANOSECONDS)) return null;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new DbException.ReadersFull("all " + readSlotCount + " read slots stayed in use for " + readerWaitNanos / 1_000_000
            + " ms: more reads at once than LmdbEngine.builder(dir).maxReaders(n) allows (--db-max-readers N raises it; "
            + RESERVED_READERS + " more are left to other processes)", null);
    }

    private void releaseReadTxn(org.lmdbjava.Txn<ByteBuffer> t) {
        if (readOnly) {
            // not pooled, but committed: a space opened in a read transaction stays open only
            // after its commit (mdb_txn_commit keeps the handles it opened; a reset or abort closes them)
            try {
                t.commit();
            } catch (LmdbException e) {
                // a transaction that failed: closing it aborts it
            }
            t.close();
            readSlots.release();
            return;
        }
        // a waiting reader gets the slot at once; from the pool it would take it only at its next poll
        if (!readSlots.hasQueuedThreads()) {
            if (idleReadCount.incrementAndGet() <= maxIdleReadTxns) {
                t.reset();
                idleReadTxns.offer(t);
                return;
            }
            idleReadCount.decrementAndGet();
        }
        t.close();
        readSlots.release();
    }

    /**
     * Closes a pooled (reset) read transaction so that it gives its reader slot back. lmdbjava 0.9's
     * {@code Txn.close()} aborts only a transaction that is not reset: closing a reset one leaks the
     * native transaction and, under MDB_NOTLS, its slot in LMDB's reader table. So it is renewed
     * first (a few hundred ns), then closed.
     */
    private static void closeResetReadTxn(org.lmdbjava.Txn<ByteBuffer> t) {
        try {
            t.renew();
        } catch (RuntimeException e) {
            // a fatal environment refuses it (MDB_PANIC): the close of the environment that follows
            // frees this process's reader slots with the rest
        }
        t.close();
    }

    /** One LMDB transaction: a pooled read, the top-level write, or a nested write. */
    private final class LmdbTxn implements KvTxn {
        final org.lmdbjava.Txn<ByteBuffer> lmdb;
        private final boolean readOnly;
        private final boolean topLevel;
        /** Set once an LMDB call failed in this transaction: LMDB then answers every later call MDB_BAD_TXN. */
        private boolean failed;
        private boolean committed;

        LmdbTxn(org.lmdbjava.Txn<ByteBuffer> lmdb, boolean readOnly, boolean topLevel) {
            this.lmdb = lmdb;
            this.readOnly = readOnly;
            this.topLevel = topLevel;
        }

        /**
         * Notes that an LMDB call in this transaction failed, and tells corruption from misuse: LMDB
         * answers MDB_BAD_TXN to every call after a failed one in the same transaction (a query that
         * caught an LMDB error and went on), but also to the first call when it could not read a
         * table's record from the main database (mdb_cursor_init ignores that read's error and flags
         * the transaction): a transaction's first failure being MDB_BAD_TXN means a corrupted page.
         *
         * @return what to throw: {@link KvTxn.TooLarge} for a full map or transaction, a
         *         {@link CorruptedPage} for a first failure that is MDB_BAD_TXN, else {@code e}
         */
        RuntimeException failure(LmdbException e) {
            boolean first = !failed;
            failed = true;
            if (e instanceof Env.MapFullException) {
                return new TooLarge(true, "this write does not fit in the " + (mapSize >> 20) + " MiB the database may hold"
                    + " (LmdbEngine.builder(dir).maxMapSize, lmdb:DIR?maxMapSize=BYTES; by default what the disk held at start,"
                    + " less a reserve); delete data, or free disk space and restart", e);
            }
            if (e instanceof org.lmdbjava.Txn.TxFullException) return new TooLarge(false, "LMDB's transaction is full (MDB_TXN_FULL)", e);
            return first && e instanceof org.lmdbjava.Txn.BadException ? new CorruptedPage(e) : e;
        }

        @Override
        public boolean isReadOnly() {
            return readOnly;
        }

        @Override
        public ByteBuffer get(KvSpace space, ByteBuffer key) {
            try {
                return ((Space) space).dbi.get(lmdb, key);
            } catch (LmdbException e) {
                throw failure(e);
            }
        }

        @Override
        public KvCursor range(KvSpace space, byte[] begin, byte[] end, boolean reverse, int limitHint) {
            try {
                return new LmdbRange(this, ((Space) space).dbi.openCursor(lmdb), begin, end, reverse);
            } catch (LmdbException e) {
                throw failure(e);
            }
        }

        @Override
        public long count(KvSpace space) {
            try {
                return ((Space) space).dbi.stat(lmdb).entries;
            } catch (LmdbException e) {
                throw failure(e);
            }
        }

        @Override
        public ByteBuffer reserve(KvSpace space, ByteBuffer key, int size) {
            try {
                return ((Space) space).dbi.reserve(lmdb, key, size);
            } catch (LmdbException e) {
                throw failure(e);
            }
        }

        @Override
        public boolean delete(KvSpace space, ByteBuffer key) {
            try {
                return ((Space) space).dbi.delete(lmdb, key);
            } catch (LmdbException e) {
                throw failure(e);
            }
        }

        @Override
        public KvTxn nested() {
            return new LmdbTxn(env.txn(lmdb), false, false);
        }

        @Override
        public void commit() {
            try {
                lmdb.commit();
                committed = true;
            } catch (LmdbException e) {
                throw failure(e);
            } finally {
                if (topLevel) {
                    metaEpoch++;  // one writer thread: the non-atomic increment is safe; volatile publishes it
                    if (committed) usedBytes = usedBytesNow();
                }
            }
        }

        @Override
        public void close() {
            if (readOnly) releaseReadTxn(lmdb);
            else lmdb.close();
        }
    }

    /** A direct buffer per thread to position cursors with: LMDB reads the key during the call only. */
    private static final ThreadLocal<ByteBuffer> SEEK_BUFFER = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(Table.MAX_KEY_BYTES));

    /** A walk of {@code [begin, end)} with an LMDB cursor, forward or back. */
    private static final class LmdbRange implements KvCursor {
        private final LmdbTxn txn;
        private final Cursor<ByteBuffer> cursor;
        private final byte[] begin, end;
        private final boolean reverse;
        private boolean started;

        LmdbRange(LmdbTxn txn, Cursor<ByteBuffer> cursor, byte[] begin, byte[] end, boolean reverse) {
            this.txn = txn;
            this.cursor = cursor;
            this.begin = begin;
            this.end = end;
            this.reverse = reverse;
        }

        @Override
        public boolean next() {
            try {
                boolean at;
                if (started) {
                    at = reverse ? cursor.prev() : cursor.next();
                } else {
                    started = true;
                    at = reverse ? seekLast() : seekFirst();
                }
                if (!at) return false;
                return reverse ? begin == null || Keys.compare(cursor.key(), begin) >= 0
                    : end == null || Keys.compare(cursor.key(), end) < 0;
            } catch (LmdbException e) {
                throw txn.failure(e);
            }
        }

        private boolean seekFirst() {
            return begin == null ? cursor.first() : cursor.get(seek(begin), GetOp.MDB_SET_RANGE);
        }

        /** The last key below {@code end}: before the first key at or above it, else the last. */
        private boolean seekLast() {
            if (end == null || !cursor.get(seek(end), GetOp.MDB_SET_RANGE)) return cursor.last();
            return cursor.prev();
        }

        private static ByteBuffer seek(byte[] key) {
            return SEEK_BUFFER.get().clear().put(key).flip();
        }

        @Override
        public ByteBuffer key() {
            return cursor.key();
        }

        @Override
        public ByteBuffer value() {
            return cursor.val();
        }

        @Override
        public void close() {
            cursor.close();
        }
    }

    /** Creates the data directory if missing and checks that this user may read and write it. */
    private static void createDirectory(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException | SecurityException e) {
            throw new DbException.DataDirectory("cannot create data directory " + dir.toAbsolutePath() + ": " + e, e);
        }
        if (!Files.isDirectory(dir)) {
            throw new DbException.DataDirectory("data directory " + dir.toAbsolutePath() + " is not a directory", null);
        }
        if (!Files.isWritable(dir) || !Files.isReadable(dir)) {
            throw new DbException.DataDirectory("data directory " + dir.toAbsolutePath() + " is not readable and writable by this user", null);
        }
    }

    /** Checks that {@code dir} holds a database to open read-only: nothing is created. */
    private static void checkReadable(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new DbException.DataDirectory("no database in " + dir.toAbsolutePath() + ": no such directory", null);
        }
        if (!Files.isRegularFile(dir.resolve(LmdbBackup.DATA_FILE))) {
            throw new DbException.DataDirectory("no database in " + dir.toAbsolutePath() + " (no " + LmdbBackup.DATA_FILE + " there)", null);
        }
    }

    private static Env<ByteBuffer> openEnv(Path dir, long maxMapSize, int maxTables, int maxReaders, EnvFlags[] extraFlags) {
        EnvFlags[] flags = java.util.Arrays.copyOf(extraFlags, extraFlags.length + 1);
        flags[extraFlags.length] = EnvFlags.MDB_NOTLS;
        LmdbLibrary.load();
        try {
            // MDB_NOTLS: read transactions are not tied to a thread, so the pool can hand them to
            // any thread. Sync mode is LMDB's default: every commit is fsync'ed (durable). The map is
            // the ceiling from the start: it never grows, so no read ever waits for a remap.
            return Env.create()
                .setMapSize(maxMapSize > 0 ? maxMapSize : defaultMaxMapSize(dir))
                .setMaxDbs(maxTables)
                .setMaxReaders(maxReaders)
                .open(dir.toFile(), flags);
        } catch (Env.VersionMismatchException | Env.FileInvalidException | LmdbNativeException.PageCorruptedException
                 | LmdbNativeException.PanicException e) {
            throw new DbException.Corrupt("data directory " + dir.toAbsolutePath() + " does not hold a valid LMDB database"
                + " of a compatible version (" + e.getMessage() + "); move it aside or point --data elsewhere", e);
        } catch (LmdbException e) {
            throw new DbException.DataDirectory("cannot open LMDB environment in " + dir.toAbsolutePath() + ": " + e.getMessage(), e);
        }
    }

    /**
     * The default of {@link Builder#maxMapSize}: the data file's size plus the file system's usable
     * space less a reserve of 5 % of the file system (at least 64 MiB), at least 1 MiB and at most
     * 1 TiB, in whole MiB.
     */
    public static long defaultMaxMapSize(Path dir) {
        try {
            FileStore store = Files.getFileStore(dir);
            Path file = dir.resolve(LmdbBackup.DATA_FILE);
            long used = Files.exists(file) ? Files.size(file) : 0;
            long reserve = Math.max(64L << 20, store.getTotalSpace() / 20);
            long ceiling = Math.min(used + Math.max(0, store.getUsableSpace() - reserve), 1L << 40);
            long mib = 1L << 20;
            return Math.max(ceiling, used + mib) / mib * mib;
        } catch (IOException e) {
            throw new DbException.DataDirectory("cannot read the free space of " + dir.toAbsolutePath() + ": " + e, e);
        }
    }

    /** @return {@code LMDB in} and the directory, for messages */
    @Override
    public String toString() {
        return "LMDB in " + dir;
    }

    /** Settings for {@link LmdbEngine}; every one has a default that suits a 1 GB VPS. */
    public static final class Builder {
        private final Path dir;
        private long maxMapSize;
        private int maxTables = 32;
        private boolean maxTablesSet;
        private boolean readOnly;
        private boolean lock = true;
        private int maxReaders = 1024;
        private long readerWaitNanos = 5_000_000_000L;
        private EnvFlags[] extraFlags = {};

        private Builder(Path dir) {
            this.dir = java.util.Objects.requireNonNull(dir, "dir");
        }

        /**
         * The most the database may hold, bytes: LMDB maps this much address space at open, and only
         * the pages written become file and memory, so the map never has to grow (growing would
         * have to wait for every read in flight). Past it writes fail with
         * {@link DbException.DatabaseFull} and reads go on. Default: what the disk can hold, leaving
         * a reserve: the data file's size plus the file system's usable space at open, less 5 % of
         * the file system (at least 64 MiB), at most 1 TiB. A disk that fills up anyway fails
         * commits with {@link DbException.CommitFailed} until space returns.
         */
        public Builder maxMapSize(long bytes) {
            if (bytes < (1 << 20)) throw new IllegalArgumentException("maxMapSize must be at least 1 MiB, got " + bytes);
            this.maxMapSize = bytes;
            return this;
        }

        /** Maximum number of tables, indexes and feed logs (LMDB databases; default 32). */
        public Builder maxTables(int n) {
            if (n < 1) throw new IllegalArgumentException("maxTables must be >= 1, got " + n);
            this.maxTables = n;
            this.maxTablesSet = true;
            return this;
        }

        /**
         * LMDB's reader table size (default 1024): {@value #RESERVED_READERS} slots are left to other
         * processes (a backup), the rest bound this process's read transactions, in use and pooled.
         * A read that finds every slot held waits up to {@link #readerWait} for one.
         */
        public Builder maxReaders(int n) {
            if (n < RESERVED_READERS + 2) throw new IllegalArgumentException("maxReaders must be >= " + (RESERVED_READERS + 2) + ", got " + n);
            this.maxReaders = n;
            return this;
        }

        /**
         * How long a read waits for a reader slot when every slot is held (default 5 s) before it
         * fails with {@link DbException.ReadersFull}. Only many threads reading at once wait: virtual
         * threads (each read holds a slot while its query runs), never a Kilim server's few carriers.
         */
        public Builder readerWait(java.time.Duration wait) {
            if (wait.isNegative()) throw new IllegalArgumentException("readerWait must be >= 0, got " + wait);
            this.readerWaitNanos = wait.toNanos();
            return this;
        }

        /**
         * More LMDB environment flags. Not for a server: {@code MDB_NOSYNC} acknowledges writes before
         * they are durable, which the power-cut test uses to show that it catches exactly that.
         */
        public Builder flags(EnvFlags... flags) {
            this.extraFlags = flags.clone();
            return this;
        }

        /**
         * Opens the database to read only (LMDB's MDB_RDONLY), beside whatever process writes it: no
         * lock is taken, nothing is created (the directory must hold a database), pooled read
         * transactions are not kept, and {@link LmdbEngine#beginWrite} is refused. Each read
         * transaction holds one of the reader slots the writer leaves to other processes
         * ({@value #RESERVED_READERS}). Unless {@link #maxTables} says otherwise, up to 1024 tables
         * may be opened. For tools: {@code kiln db stat}, {@code range}, {@code dump}, {@code verify}.
         */
        public Builder readOnly() {
            this.readOnly = true;
            return this;
        }

        /**
         * Opens the database to write without taking the writers' lock ({@value #LOCK_FILE}; see the
         * class comment): beside a process that writes it, only to write what that process never
         * reads. {@code --backup} does, for its mark ({@link kiln.db.KvEngine#BACKUP_MARKS}); a
         * second server or a load must not ({@code lmdb:DIR?lock=false}).
         */
        public Builder withoutLock() {
            this.lock = false;
            return this;
        }

        /**
         * Opens the environment, creating the directory and the LMDB files if missing.
         *
         * @throws DbException.DataDirectory when the directory cannot be created, read or written
         *         (read-only: when it holds no database)
         * @throws DbException.InUse when another process (or this one) has it open to write
         * @throws DbException.Corrupt when it holds no valid LMDB database of a compatible version
         */
        public LmdbEngine open() {
            return new LmdbEngine(this);
        }
    }
}

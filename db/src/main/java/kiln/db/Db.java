package kiln.db;

import java.io.IOException;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.LmdbException;
import org.lmdbjava.LmdbNativeException;

/**
 * An embedded database on LMDB whose query language is Java: a query is a lambda over a
 * transaction.
 *
 * <pre>{@code
 * try (Db db = Db.open(Path.of("data"))) {
 *     Table<Integer, Integer> worlds = db.table("world", Codec.INT, Codec.INT);
 *     db.write(txn -> { worlds.put(txn, 1, 42); return null; }).join();  // durable when join returns
 *     int n = db.read(txn -> worlds.get(txn, 1)).join();
 * }
 * }</pre>
 *
 * <h2>Threading</h2>
 * <ul>
 *   <li><b>Reads</b> run inline on the calling thread in a pooled read-only transaction
 *       (renewed, not reopened: a few hundred ns), so {@link #read} returns an already completed
 *       future and {@code await()} on it never pauses. A read query must be short: it occupies
 *       the caller's (carrier) thread.</li>
 *   <li><b>Writes</b> go to one writer thread, because an LMDB write transaction is bound to the OS
 *       thread that opened it and fibers move between carrier threads. The writer takes every write
 *       waiting in its queue, runs each in its own nested transaction, and commits them together:
 *       one fsync serves the whole batch (group commit). A write's future completes only after that
 *       commit is durable on disk.</li>
 * </ul>
 *
 * <h2>Errors</h2>
 * A write query that throws is rolled back alone (its nested transaction is aborted) and its future
 * fails with the exception; its batch-mates still commit. When the memory map is full the writer
 * grows it (doubling) and runs the batch again, so write queries must be safe to re-run (see
 * {@link Query}). Problems of the database itself are {@link DbException}s.
 *
 * <p>Source for the LMDB rules relied on here: the LMDB API docs (mdb_txn_begin, MDB_NOTLS,
 * mdb_env_set_mapsize), http://www.lmdb.tech/doc/group__mdb.html
 */
public final class Db implements AutoCloseable {
    private final Path dir;
    private final Env<ByteBuffer> env;
    private final Writer writer;
    /** Reads hold it shared; growing the map and closing hold it exclusively (no active txns allowed then). */
    private final ReentrantReadWriteLock mapLock = new ReentrantReadWriteLock();
    private final ConcurrentLinkedQueue<org.lmdbjava.Txn<ByteBuffer>> idleReadTxns = new ConcurrentLinkedQueue<>();
    private final AtomicInteger idleReadCount = new AtomicInteger();
    private final int maxIdleReadTxns;
    private final long writerStallNanos;
    private volatile boolean closed;
    /** The table of every {@link Sequence}, opened on first use. */
    private Table<String, Long> sequences;
    /** Map size in bytes, kept here so that {@link #stats} never calls into a closing environment. */
    private volatile long mapSize;
    /** Every table opened, by name: a table with a change feed must be one object (it records its writes). */
    private final Map<String, Table<?, ?>> tables = new HashMap<>();
    private final List<ChangeFeed<?, ?>> feeds = new ArrayList<>();
    /** {@link #feeds} as the writer thread reads it, without a lock: replaced whole when a feed opens. */
    private volatile List<ChangeFeed<?, ?>> feedList = List.of();
    /** How long a change feed's readers wait on one future at most; see {@link ChangeFeed#renewIfOlder}. */
    private static final long FEED_RENEW_NANOS = 60_000_000_000L;
    private final int maxWatches;
    private final AtomicInteger watches = new AtomicInteger();

    private Db(Builder b) {
        this.dir = b.dir;
        this.env = openEnv(b);
        this.mapSize = env.info().mapSize;
        this.maxIdleReadTxns = Math.max(1, b.maxReaders / 2);
        this.writerStallNanos = b.writerStallNanos;
        this.maxWatches = b.maxWatches;
        this.writer = new Writer(this, env, b.maxBatch, b.queueCapacity, b.betweenCommitAndPublish);
    }

    /** Opens (creating if needed) the database in {@code dir} with default settings. */
    public static Db open(Path dir) {
        return builder(dir).open();
    }

    /** @return a builder for a database in {@code dir} */
    public static Builder builder(Path dir) {
        return new Builder(dir);
    }

    /** @return the data directory */
    public Path directory() {
        return dir;
    }

    /**
     * Opens (creating if missing) a table. Call it at start-up, not inside a query.
     *
     * @param name   the LMDB database name, 1..511 bytes
     * @param keys   key codec
     * @param values value codec
     * @return the table; the same object as an earlier call's with the same name and codecs
     * @throws IllegalStateException on the writer thread (inside a write query or a write future's
     *                               callback), or when the table has a change feed and was opened
     *                               with other codecs before
     */
    public synchronized <K, V> Table<K, V> table(String name, Codec<K> keys, Codec<V> values) {
        checkOpen();
        if (writer.isWriterThread()) {
            throw new IllegalStateException("db.table() cannot be called inside a write query or a write future's callback"
                + " (it waits for the writer thread); open tables at start-up");
        }
        Table<?, ?> known = tables.get(name);
        if (known != null && known.keys() == keys && known.values() == values) {
            @SuppressWarnings("unchecked") Table<K, V> same = (Table<K, V>) known;
            return same;
        }
        if (known != null && known.feed() != null) {
            throw new IllegalStateException("table '" + name + "' has a change feed, which records the writes of the Table object"
                + " it was opened with: open the table once (with the same codec objects) and share that object");
        }
        Table<K, V> table = new Table<>(name, openDbi(name), keys, values);
        tables.putIfAbsent(name, table);
        return table;
    }

    /**
     * Opens (creating if missing) the LMDB database {@code name} on the writer thread: creating one
     * commits a write transaction ({@code mdb_dbi_open} with {@code MDB_CREATE}), and every commit goes
     * through the writer, so that reads never go back in time ({@link #acquireReadTxn}).
     */
    private Dbi<ByteBuffer> openDbi(String name) {
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        try {
            return writer.submitAlone(txn -> env.openDbi(txn.lmdb, bytes, null, false, DbiFlags.MDB_CREATE)).join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    /**
     * Opens the change feed of {@code table}: from the next write on, every write query's puts and
     * deletes on it are recorded, numbered, kept in a log of the last {@code window} sets (table
     * {@code kiln.changes.<name>}, in the same transaction) and published once durable; see
     * {@link ChangeFeed}. Call it at start-up (it waits for one empty write, so for the writer).
     * Numbering goes on from the log after a restart.
     *
     * @param window how many of the newest change sets to keep, >= 1: how far a reader may lag (or
     *               how long it may be away) and still resume; the newest min(window, 4096) are also
     *               kept in memory
     * @return the feed; the same object for the same table (then {@code window} must be the same)
     * @throws IllegalArgumentException when {@code window < 1}, or differs from the open feed's
     * @throws IllegalStateException    on the writer thread, or in fiber code (it joins the write)
     * @throws DbException              when the write that switches recording on fails
     */
    public <K, V> ChangeFeed<K, V> changeFeed(Table<K, V> table, int window) {
        if (window < 1) throw new IllegalArgumentException("window must be >= 1, got " + window);
        ChangeFeed<K, V> feed;
        synchronized (this) {
            checkOpen();
            if (tables.get(table.name()) != table) {
                throw new IllegalArgumentException("table " + table + " was not opened by this database (or was opened again since):"
                    + " open it once and pass that object");
            }
            if (table.feed() != null) {
                if (table.feed().window() != window) {
                    throw new IllegalArgumentException("the change feed of '" + table.name() + "' is open with window " + table.feed().window());
                }
                return table.feed();
            }
            Table<Long, ChangeFeed.Logged<K, V>> log = table(ChangeFeed.LOG_PREFIX + table.name(), Codec.LONG,
                new ChangeFeed.LogCodec<>(table.keys(), table.values()));
            feed = new ChangeFeed<>(this, table, log, window);
            feeds.add(feed);
            feedList = List.copyOf(feeds);
        }
        ChangeFeed<K, V> opened = feed;
        // On the writer thread, between two write queries: exactly the writes after this one are recorded.
        write(txn -> {
            opened.start(txn);
            table.feed(opened);
            return null;
        }).join();
        return feed;
    }

    /** On the writer thread while it has no work: see {@link ChangeFeed#renewIfOlder}. */
    void writerIdle() {
        for (ChangeFeed<?, ?> feed : feedList) feed.renewIfOlder(FEED_RENEW_NANOS);
    }

    /** @return a pending watch's place under {@link Builder#maxWatches}, or false when there is none left */
    boolean reserveWatch() {
        if (watches.incrementAndGet() <= maxWatches) return true;
        watches.decrementAndGet();
        return false;
    }

    void releaseWatch() {
        watches.decrementAndGet();
    }

    int maxWatches() {
        return maxWatches;
    }

    /**
     * Opens (creating if missing) a durable counter for ids; see {@link Sequence}. Call it at start-up.
     *
     * @param name the sequence's name, 1..511 bytes of UTF-8
     * @throws IllegalStateException on the writer thread (inside a write query)
     */
    public synchronized Sequence sequence(String name) {
        if (sequences == null) sequences = table(Sequence.TABLE, Codec.STRING, Codec.LONG);
        return new Sequence(sequences, name);
    }

    /**
     * Runs a read-only query on the calling thread against a consistent snapshot.
     *
     * @return a future that is already complete: with the result, the query's exception, or a
     *         {@link DbException} ({@link DbException.Closed}, {@link DbException.ReadersFull})
     */
    public <R> QueryFuture<R> read(Query<R> query) {
        QueryFuture<R> f = new QueryFuture<>();
        try {
            f.succeed(readNow(query));
        } catch (Throwable t) {
            f.fail(t);
        }
        return f;
    }

    private <R> R readNow(Query<R> query) throws Exception {
        if (writer.isRunningQuery()) {
            throw new IllegalStateException("db.read() inside a write query: use the write transaction you were given");
        }
        ReentrantReadWriteLock.ReadLock lock = mapLock.readLock();
        lock.lock();
        try {
            checkOpen();
            org.lmdbjava.Txn<ByteBuffer> t = acquireReadTxn();
            try {
                return query.run(new Txn(t, true));
            } finally {
                releaseReadTxn(t);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes a read transaction from the pool (renewed) or opens one, on the newest committed snapshot.
     *
     * <p>Invariant: reads never go back in time. A transaction begun after another on the same thread
     * sees a snapshot at least as new. LMDB's begin (mdb_txn_begin/renew) reads the last committed
     * txn id, then copies the meta page of that id's parity, which the writer's next-but-one commit
     * rewrites; so a begin that overlapped the end of a commit ({@link Writer#metaEpoch} moved while
     * it ran) begins again. A begin that overlapped no commit end cannot have met that rewrite.
     * {@code ReadConsistencyTest} guards it.
     */
    private org.lmdbjava.Txn<ByteBuffer> acquireReadTxn() {
        org.lmdbjava.Txn<ByteBuffer> t = idleReadTxns.poll();
        if (t != null) idleReadCount.decrementAndGet();
        while (true) {
            long epoch = writer.metaEpoch();
            try {
                if (t == null) {
                    t = env.txnRead();
                } else {
                    t.renew();
                }
            } catch (Env.ReadersFullException e) {
                throw new DbException.ReadersFull("LMDB reader table is full: more threads read at once than maxReaders allows"
                    + " (raise Db.builder(dir).maxReaders(n))", e);
            } catch (RuntimeException e) {
                if (t != null) t.close();
                throw e;
            }
            VarHandle.acquireFence(); // the begin's loads of the meta page stay before the epoch load below
            if (writer.metaEpoch() == epoch) return t;
            t.reset();
        }
    }

    private void releaseReadTxn(org.lmdbjava.Txn<ByteBuffer> t) {
        t.reset();
        if (idleReadCount.incrementAndGet() <= maxIdleReadTxns) {
            idleReadTxns.offer(t);
        } else {
            idleReadCount.decrementAndGet();
            t.close();
        }
    }

    /**
     * Queues a write query for the writer thread. It runs in its own nested transaction inside the
     * next batch; the future completes after the batch's commit is durable (fsync), with the
     * query's result, or with its exception if it threw (then it alone was rolled back).
     *
     * <p>The query may be run more than once (map growth); see {@link Query}.
     *
     * @return the pending result; it fails with {@link IllegalStateException} when called inside a
     *         write query, {@link DbException.Closed} after {@link #close},
     *         {@link DbException.Overloaded} when the write queue is full, or
     *         {@link DbException.CommitFailed} when the commit itself failed (e.g. disk full)
     */
    public <R> QueryFuture<R> write(Query<R> query) {
        if (writer.isRunningQuery()) {
            // joining it would deadlock the writer on itself
            return QueryFuture.failed(new IllegalStateException(
                "db.write() inside a write query: do the work in the transaction you were given"));
        }
        if (closed) {
            return QueryFuture.failed(new DbException.Closed("database " + dir + " is closed"));
        }
        return writer.submit(query);
    }

    /** @return counters since open: commits, writes, batch sizes, map size (also after {@link #close}) */
    public DbStats stats() {
        return writer.stats(mapSize);
    }

    /**
     * Stops accepting writes, commits every write already queued, waits for reads in flight, and
     * closes LMDB. Idempotent.
     *
     * @throws IllegalStateException on the writer thread (in a write future's callback)
     */
    @Override
    public void close() {
        if (writer.isWriterThread()) {
            throw new IllegalStateException("db.close() from a write future's callback would wait for the writer thread,"
                + " which is running that callback; close from another thread");
        }
        synchronized (this) {
            if (closed) return;
            closed = true;
        }
        writer.shutdownAndDrain();
        synchronized (this) {
            for (ChangeFeed<?, ?> feed : feeds) feed.close();
        }
        mapLock.writeLock().lock();
        try {
            org.lmdbjava.Txn<ByteBuffer> t;
            while ((t = idleReadTxns.poll()) != null) t.close();
            env.close();
        } finally {
            mapLock.writeLock().unlock();
        }
    }

    /**
     * Checks what a health endpoint reports: the database is open, a read transaction begins (the
     * environment answers reads), and the writer thread is running and not stuck: it has been in
     * its current batch for less than {@link Builder#writerStallLimit} (a commit that never returns,
     * a write query that never ends). Cheap: one pooled read transaction.
     *
     * @return healthy, or the first problem found
     */
    public DbHealth health() {
        if (closed) return DbHealth.problem("the database is closed");
        if (!writer.isAlive()) return DbHealth.problem("the database's writer thread is not running");
        long busy = writer.busyNanos(System.nanoTime());
        if (busy > writerStallNanos) {
            return DbHealth.problem("the database's writer has been in one batch for " + busy / 1_000_000 + " ms, "
                + stats().queued + " writes waiting");
        }
        try {
            readNow(txn -> Boolean.TRUE);
        } catch (Exception e) {
            return DbHealth.problem("the database does not answer reads: " + e.getMessage());
        }
        return DbHealth.ok();
    }

    /**
     * Writes a compacted copy of the database into {@code target} (created if missing; it must be
     * empty) as {@code target/data.mdb}, while reads and writes go on: it first commits a backup mark
     * (one durable write to the table {@value Backup#MARKS}), then LMDB copies the snapshot of one
     * read transaction ({@code mdb_env_copy2} with {@code MDB_CP_COMPACT}), so the copy holds every
     * write whose future completed before the call, and no write half-applied. The copy is then
     * flushed to disk and read back before this returns: every entry of every table, each table's
     * count against the count it records, and the mark (LMDB begins the copy's read transaction
     * outside kiln's snapshot guard, so the copy proves it is at least as new as the call).
     *
     * <p>Writes go on during the copy, but the map cannot grow until it ends: a write that needs a
     * larger map (and reads that arrive after it) waits for the copy. To restore, stop the server
     * and put the copy's {@code data.mdb} in place of the data directory's.
     *
     * @return the copy, {@code target/data.mdb}
     * @throws DbException.BackupFailed when {@code target} is not an empty directory, the mark cannot
     *         be written (disk full: then copy {@code data.mdb} with the server stopped), the copy
     *         fails or does not read back; a partial copy is removed
     * @throws DbException.Closed after {@link #close}
     */
    public Path backup(Path target) {
        boolean created = Backup.prepareTarget(target, dir);
        try {
            long mark = markBackup();
            ReentrantReadWriteLock.ReadLock lock = mapLock.readLock();
            lock.lock();  // the copy's read transaction must not see the map move (growMap)
            try {
                checkOpen();
                Backup.copy(env, target);
            } finally {
                lock.unlock();
            }
            Backup.finish(target, mark);
            return target.resolve(Backup.DATA_FILE);
        } catch (LmdbException e) {
            Backup.discard(target, created);
            throw new DbException.BackupFailed("backup of " + dir.toAbsolutePath() + " into " + target.toAbsolutePath()
                + " failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            Backup.discard(target, created);
            throw e;
        }
    }

    /**
     * Commits the next backup mark ({@link Backup#MARKS}) through the writer, after every write
     * acknowledged before the call. LMDB's copy begins its own read transaction, outside the guard
     * of {@link #acquireReadTxn}; a copy that holds this mark holds a snapshot at least that new.
     *
     * @return the mark the copy must hold
     */
    private long markBackup() {
        Table<String, Long> marks = table(Backup.MARKS, Codec.STRING, Codec.LONG);
        try {
            return write(txn -> {
                long mark = marks.get(txn, Backup.MARK_KEY, 0L) + 1;
                marks.put(txn, Backup.MARK_KEY, mark);
                return mark;
            }).join();
        } catch (CompletionException e) {
            throw new DbException.BackupFailed("backup of " + dir.toAbsolutePath() + " could not write its mark (a backup begins with"
                + " one small durable write; with the disk full, stop the server and copy data.mdb instead): " + e.getCause().getMessage(), e.getCause());
        }
    }

    /** @return true once {@link #close} has begun */
    public boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) throw new DbException.Closed("database " + dir + " is closed");
    }

    /** @return the writer's count of commit attempts (see {@link Writer#metaEpoch}); for tests */
    long metaEpoch() {
        return writer.metaEpoch();
    }

    /** Called by the writer with no write txn open: doubles the map while no read is active. */
    long growMap() {
        mapLock.writeLock().lock();
        try {
            long size = env.info().mapSize * 2;
            env.setMapSize(size);
            mapSize = size;
            return size;
        } finally {
            mapLock.writeLock().unlock();
        }
    }

    private static Env<ByteBuffer> openEnv(Builder b) {
        Path dir = b.dir;
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
        try {
            // MDB_NOTLS: read transactions are not tied to a thread, so the pool can hand them to
            // any thread. Sync mode is LMDB's default: every commit is fsync'ed (durable).
            return Env.create()
                .setMapSize(b.mapSize)
                .setMaxDbs(b.maxTables)
                .setMaxReaders(b.maxReaders)
                .open(dir.toFile(), EnvFlags.MDB_NOTLS);
        } catch (Env.VersionMismatchException | Env.FileInvalidException | LmdbNativeException.PageCorruptedException
                 | LmdbNativeException.PanicException e) {
            throw new DbException.Corrupt("data directory " + dir.toAbsolutePath() + " does not hold a valid LMDB database"
                + " of a compatible version (" + e.getMessage() + "); move it aside or point --data elsewhere", e);
        } catch (LmdbException e) {
            throw new DbException.DataDirectory("cannot open LMDB environment in " + dir.toAbsolutePath() + ": " + e.getMessage(), e);
        }
    }

    /** Settings for {@link Db}; every one has a default that suits a 1 GB VPS. */
    public static final class Builder {
        private final Path dir;
        private long mapSize = 64L << 20;
        private int maxTables = 32;
        private int maxReaders = 1024;
        private int maxBatch = 1024;
        private int queueCapacity = 16384;
        private long writerStallNanos = 10_000_000_000L;
        private int maxWatches = 10_000;
        private Runnable betweenCommitAndPublish;

        private Builder(Path dir) {
            this.dir = dir;
        }

        /** Initial memory-map size in bytes (default 64 MiB); it doubles on demand. */
        public Builder mapSize(long bytes) {
            if (bytes < (1 << 16)) throw new IllegalArgumentException("mapSize must be at least 64 KiB, got " + bytes);
            this.mapSize = bytes;
            return this;
        }

        /** Maximum number of tables (default 32). */
        public Builder maxTables(int n) {
            if (n < 1) throw new IllegalArgumentException("maxTables must be >= 1, got " + n);
            this.maxTables = n;
            return this;
        }

        /** Maximum concurrent read transactions, LMDB's reader table size (default 1024). */
        public Builder maxReaders(int n) {
            if (n < 2) throw new IllegalArgumentException("maxReaders must be >= 2, got " + n);
            this.maxReaders = n;
            return this;
        }

        /**
         * Most writes committed in one transaction (default 1024). 1 disables group commit: one
         * fsync per write, the baseline the benchmark compares against.
         */
        public Builder maxBatch(int n) {
            if (n < 1) throw new IllegalArgumentException("maxBatch must be >= 1, got " + n);
            this.maxBatch = n;
            return this;
        }

        /** Writes that may wait for the writer before {@link DbException.Overloaded} (default 16384). */
        public Builder queueCapacity(int n) {
            if (n < 1) throw new IllegalArgumentException("queueCapacity must be >= 1, got " + n);
            this.queueCapacity = n;
            return this;
        }

        /**
         * How long the writer may spend on one batch before {@link Db#health} calls it stuck
         * (default 10 s: a batch takes milliseconds; seconds mean a disk or a write query that hangs).
         */
        public Builder writerStallLimit(java.time.Duration limit) {
            if (limit.isNegative() || limit.isZero()) throw new IllegalArgumentException("writerStallLimit must be positive, got " + limit);
            this.writerStallNanos = limit.toNanos();
            return this;
        }

        /**
         * Most {@link ChangeFeed#watch watches} pending at once, over every feed (default 10,000, as
         * FoundationDB's per-client default); beyond it a watch fails with {@link DbException.TooManyWatches}.
         */
        public Builder maxWatches(int n) {
            if (n < 0) throw new IllegalArgumentException("maxWatches must be >= 0, got " + n);
            this.maxWatches = n;
            return this;
        }

        /** For tests (this package): {@code hook} runs on the writer thread between a durable commit and the publishing of its change sets. */
        Builder betweenCommitAndPublish(Runnable hook) {
            this.betweenCommitAndPublish = hook;
            return this;
        }

        /** Opens the database, creating the directory and the LMDB files if missing. */
        public Db open() {
            return new Db(this);
        }
    }
}

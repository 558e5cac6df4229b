package kiln.db;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An embedded database whose query language is Java: a query is a lambda over a transaction. Its
 * tables are layers over an ordered key-value engine ({@link KvEngine}), opened by URL from the
 * engines on the class path ({@link KvEngines}): {@code lmdb:DIR} or a bare directory (LMDB, module
 * kiln-db-lmdb), {@code postgresql://HOST/DATABASE} (module kiln-db-postgresql).
 *
 * <pre>{@code
 * try (Db db = Db.open(Path.of("data"))) {                // LMDB in ./data
 *     Table<Integer, Integer> worlds = db.table("world", Codec.INT, Codec.INT);
 *     db.write(txn -> { worlds.put(txn, 1, 42); return null; }).join();  // durable when join returns
 *     int n = db.read(txn -> worlds.get(txn, 1)).join();
 * }
 * }</pre>
 *
 * <h2>Threading</h2>
 * <ul>
 *   <li><b>Reads</b> run inline on the calling thread in a read-only transaction (on LMDB a
 *       pooled one, renewed, not reopened: a few hundred ns), so {@link #read} returns an already completed
 *       future and {@code await()} on it never pauses. A read query must be short: it occupies
 *       the caller's (carrier) thread. On an engine whose reads block on the network (PostgreSQL,
 *       {@link KvEngine#readThreads}) they run on read threads of their own instead, every read
 *       waiting at once in one read transaction ({@link GroupReader}), and the future completes
 *       there: callers await it, as they await writes.</li>
 *   <li><b>Writes</b> go to one writer thread, because an LMDB write transaction is bound to the OS
 *       thread that opened it and fibers move between carrier threads (over PostgreSQL, one per
 *       server, the servers taking turns). The writer takes every write
 *       waiting in its queue, runs each in its own nested transaction, and commits them together:
 *       one fsync serves the whole batch (group commit). A write's future completes only after that
 *       commit is durable on disk.</li>
 * </ul>
 *
 * <h2>Deadline</h2>
 * A write, and a read that waits for a read thread, whose future has not completed within the
 * database's deadline ({@link Builder#deadline}, default 5 s) fails with
 * {@link DbException.DeadlineExceeded}, which says what became of it: a write still queued was
 * withdrawn and is not applied; one the writer had begun may still commit (its outcome is unknown);
 * a read was abandoned. A database over the network that hangs (paused, cut off, a commit waiting
 * for a synchronous standby) is answered within about the deadline; see {@link Deadline}.
 *
 * <h2>Errors</h2>
 * A write query that throws is rolled back alone (its nested transaction is aborted) and its future
 * fails with the exception; its batch-mates still commit. A batch too large for one transaction is
 * run again one write at a time, so write queries must be safe to re-run (see {@link Query}).
 * Problems of the database itself are {@link DbException}s; after one that leaves the engine unusable
 * ({@link DbException.Fatal}: a panic, a corrupted page, an I/O error) every query fails with it.
 *
 * <h2>Size</h2>
 * How much the database may hold is the engine's setting (LMDB: its map size, mapped at its ceiling
 * when the engine opens, so no read ever waits for a remap).
 */
public final class Db implements AutoCloseable {
    private final KvEngine engine;
    /** Open, closed or fatal. */
    private final DbState state;
    private final Writer writer;
    private final Reads reads;
    /** Fails the queries not answered in time; null when {@link Builder#deadline} is zero. */
    private final Deadline deadline;
    private final Feeds feeds = new Feeds();
    private final long writerStallNanos;
    /** Its tables, indexes, feeds and sequences, by name. */
    private final Catalog catalog;

    private Db(Builder b) {
        this.engine = b.engine != null ? b.engine : KvEngines.open(b.url);
        this.state = new DbState(engine, b.onFatal);
        this.writerStallNanos = b.writerStallNanos;
        engine.deadline(b.deadline);  // before the first transaction: an engine may set up its sessions by it
        this.deadline = b.deadline.isZero() ? null : new Deadline(b.deadline, engine);
        this.writer = new Writer(state, feeds::idle, engine, b.maxBatch, b.queueCapacity, b.betweenCommitAndPublish, deadline);
        this.reads = new Reads(engine, state, writer::isRunningQuery, deadline);
        if (deadline != null) deadline.start(reads.groupReader() == null ? List.of(writer) : List.of(writer, reads.groupReader()));
        this.catalog = new Catalog(engine, state, writer, reads, feeds, new WatchBudget(b.maxWatches));
        engine.onCommits(feeds::committedElsewhere);
    }

    /**
     * Opens (creating if needed) the database in the directory {@code dir} with default settings, on
     * the local engine on the class path (LMDB, module kiln-db-lmdb).
     *
     * @throws IllegalArgumentException when no engine on the class path opens a directory
     */
    public static Db open(Path dir) {
        return builder(dir).open();
    }

    /**
     * Opens the database at {@code url} with default settings ({@link #builder(String)}).
     *
     * @throws IllegalArgumentException when no engine on the class path takes the URL, naming those found
     */
    public static Db open(String url) {
        return builder(url).open();
    }

    /**
     * Settings before opening: {@code Db db = Db.builder(Path.of("data")).maxWatches(50_000).open();}
     * (the deadline, the write queue, the watches, what to do on a fatal error: {@link Builder}).
     *
     * @param dir the directory of the data, created if missing
     * @return a builder for a database in the directory {@code dir}, on the local engine ({@link #open(Path)})
     */
    public static Builder builder(Path dir) {
        return new Builder(dir.toString(), null);
    }

    /**
     * Settings before opening a database named by URL:
     * {@code Db.builder("postgresql://kiln@db1:5432/kiln").deadline(Duration.ofSeconds(2)).open()}.
     *
     * @param url an engine's URL, opened by {@link KvEngines#open} when the builder opens the
     *            database: {@code lmdb:DIR} or a directory, {@code postgresql://HOST[:PORT]/DATABASE}
     * @return a builder for the database at {@code url}
     */
    public static Builder builder(String url) {
        return new Builder(java.util.Objects.requireNonNull(url, "url"), null);
    }

    /**
     * Settings before opening a database over an engine opened with settings of its own:
     * {@code Db.builder(LmdbEngine.builder(dir).maxMapSize(1L << 30).open()).open()}.
     *
     * @param engine an engine the caller opened (with settings of its own: {@code LmdbEngine.builder(dir)});
     *               the database closes it with itself
     * @return a builder for a database over it
     */
    public static Builder builder(KvEngine engine) {
        return new Builder(null, java.util.Objects.requireNonNull(engine, "engine"));
    }

    /** @return where the data is, for messages: a directory, or a URL without its password ({@link KvEngine#location}) */
    public String location() {
        return state.location();
    }

    /**
     * Opens (creating if missing) a table. Call it at start-up, not inside a query.
     *
     * @param name   the table's name (its key space's in the engine), 1..511 bytes of UTF-8
     * @param keys   key codec
     * @param values value codec
     * @return the table; the same object as an earlier call's with the same name and codecs
     * @throws IllegalStateException on the writer thread (inside a write query or a write future's
     *                               callback), or when the table has a change feed and was opened
     *                               with other codecs before
     */
    public <K, V> Table<K, V> table(String name, Codec<K> keys, Codec<V> values) {
        return catalog.table(name, keys, values, false, null);
    }

    /**
     * Opens (creating if missing) a table whose rows may expire, as MapDB's {@code expireAfterCreate}
     * or a cache's time to live: a put may give an expiry ({@link Table#put(Txn, Object, Object,
     * java.time.Duration)}), and {@code defaultTtl} is the expiry of a put that gives none. Reads
     * never return an expired row; a sweeper deletes them in writes of at most
     * {@value Table#SWEEP_BATCH} rows, about once a second (a fed table's feed records each as a
     * delete marked {@link ChangeSet.Change#expired expired}). Each row stores its expiry (8 bytes
     * more) and a schedule entry ({@code kiln.expiry.<name>}). Call it at start-up.
     *
     * <pre>{@code
     * Table<String, Long> sessions = db.expiringTable("sessions", Codec.STRING, Codec.LONG, Duration.ofHours(12));
     * }</pre>
     *
     * @param defaultTtl the expiry of a put that gives none, > 0; null for "never"
     * @throws IllegalStateException as {@link #table}, or when {@code name} is a table without expiry
     *                               that has rows (its values have no room for an expiry)
     */
    public <K, V> Table<K, V> expiringTable(String name, Codec<K> keys, Codec<V> values, java.time.Duration defaultTtl) {
        if (defaultTtl != null && (defaultTtl.isNegative() || defaultTtl.isZero())) {
            throw new IllegalArgumentException("defaultTtl must be positive (or null for none), got " + defaultTtl);
        }
        return catalog.table(name, keys, values, true, defaultTtl);
    }

    /**
     * Opens (creating if missing) the idempotency keys {@code name}: writes that are safe to retry,
     * each key stored with its write's result in the write's own transaction and kept for
     * {@code keep} (see {@link IdempotencyKeys}; Stripe's Idempotency-Key, the IETF's
     * draft-ietf-httpapi-idempotency-key-header). An {@link #expiringTable} underneath: call it at
     * start-up, once per name.
     *
     * <pre>{@code
     * IdempotencyKeys<Long> transfers = db.idempotencyKeys("transfers.keys", Codec.LONG, Duration.ofHours(24));
     * }</pre>
     *
     * @param name    the keys' table's name
     * @param results the codec of the writes' results, stored with each key
     * @param keep    how long a key is kept after its first use, > 0 (Stripe: at least 24 hours)
     * @throws IllegalArgumentException when {@code keep} is not positive
     * @throws IllegalStateException    as {@link #expiringTable}
     */
    public <R> IdempotencyKeys<R> idempotencyKeys(String name, Codec<R> results, Duration keep) {
        return IdempotencyKeys.open(catalog, name, results, keep);
    }

    /**
     * Opens the change feed of {@code table}: from the next write on, every write query's puts and
     * deletes on it are recorded, numbered, kept in a log of the last {@code window} sets (table
     * {@code kiln.changes.<name>}, in the same transaction) and published once durable; see
     * {@link ChangeFeed}. Call it at start-up (it waits for one empty write, so for the writer).
     * Numbering goes on from the log after a restart.
     *
     * @param window how many of the newest change sets to keep, >= 1: how far a subscriber may lag (or
     *               how long it may be away) and still resume; the newest min(window, 4096) are also
     *               kept in memory
     * @return the feed; the same object for the same table (then {@code window} must be the same)
     * @throws IllegalArgumentException when {@code window < 1}, or differs from the open feed's
     * @throws IllegalStateException    on the writer thread, or in fiber code (it joins the write)
     * @throws DbException              when the write that switches recording on fails
     */
    public <K, V> ChangeFeed<K, V> changeFeed(Table<K, V> table, int window) {
        return catalog.changeFeed(table, window);
    }

    /**
     * Declares an index of {@code table} by one key per row (see {@link Index}): from the next write
     * on, every put and delete keeps it; a table that has rows gets it built online
     * ({@link Index#ready}). Call it at start-up, after {@link #table}.
     *
     * <pre>{@code
     * Index<String, Long, User> byCity = db.index(users, "users.by-city", Codec.STRING, (id, u) -> u.city());
     * }</pre>
     *
     * @param name the index's name (its key space's), distinct from every table's and index's
     * @param keys the index key codec
     * @param key  the row's index key, or null for a row the index leaves out; the same for the
     *             same row every time (see {@link Index})
     * @return the index; the same object for the same name
     * @throws IllegalArgumentException when {@code table} was not opened by this database, or the
     *         name is taken by a table or another index of another kind
     * @throws IllegalStateException    on the writer thread
     */
    public <I, K, V> Index<I, K, V> index(Table<K, V> table, String name, Codec<I> keys,
                                          java.util.function.BiFunction<? super K, ? super V, ? extends I> key) {
        return catalog.index(table, name, keys, false, Catalog.one(key));
    }

    /**
     * Declares an index of {@code table} by any number of keys per row, e.g. a message by each of its
     * tags; as {@link #index}.
     *
     * @param keys the index keys of a row (an empty collection or null for none)
     */
    public <I, K, V> Index<I, K, V> indexMany(Table<K, V> table, String name, Codec<I> codec,
                                              java.util.function.BiFunction<? super K, ? super V, ? extends java.util.Collection<? extends I>> keys) {
        return catalog.index(table, name, codec, false, keys);
    }

    /**
     * Declares a unique index of {@code table}: no two rows may give the same key, and a write that
     * would fails with {@link DbException.UniqueViolation} (HTTP 409); as {@link #index}. Its build
     * over existing rows fails (see {@link Index#ready}) when two of them share a key.
     */
    public <I, K, V> Index<I, K, V> uniqueIndex(Table<K, V> table, String name, Codec<I> keys,
                                                java.util.function.BiFunction<? super K, ? super V, ? extends I> key) {
        return catalog.index(table, name, keys, true, Catalog.one(key));
    }

    /**
     * Opens (creating if missing) a durable counter for ids; see {@link Sequence}. Call it at start-up.
     *
     * @param name the sequence's name, 1..511 bytes of UTF-8
     * @throws IllegalStateException on the writer thread (inside a write query)
     */
    public Sequence sequence(String name) {
        return catalog.sequence(name);
    }

    /**
     * Runs a read-only query against a consistent snapshot: on the calling thread (LMDB), or, on an
     * engine whose reads block on the network (PostgreSQL: {@link KvEngine#readThreads}), on one of
     * the database's read threads, with the other reads waiting then, in one read transaction
     * ({@link GroupReader}).
     *
     * @return a future: on LMDB already complete, with the result, the query's exception, or a
     *         {@link DbException} ({@link DbException.Closed}, {@link DbException.ReadersFull}); on a
     *         network engine completed on a read thread (fibers and virtual threads await it;
     *         {@link DbException.Unavailable} when the database cannot be reached,
     *         {@link DbException.DeadlineExceeded} when it did not answer within
     *         {@link Builder#deadline})
     */
    public <R> QueryFuture<R> read(Query<R> query) {
        return reads.read(query);
    }

    /**
     * Queues a write query for the writer thread. It runs in its own nested transaction inside the
     * next batch; the future completes after the batch's commit is durable (fsync), with the
     * query's result, or with its exception if it threw (then it alone was rolled back).
     *
     * <p>The query may be run more than once (a batch too large for one transaction is run again one
     * write at a time); see {@link Query}.
     *
     * @return the pending result; it fails with {@link IllegalStateException} when called inside a
     *         write query, {@link DbException.Closed} after {@link #close},
     *         {@link DbException.Overloaded} when the write queue is full,
     *         {@link DbException.CommitFailed} when the commit itself failed (e.g. disk full), or
     *         {@link DbException.DeadlineExceeded} when it was not committed within
     *         {@link Builder#deadline}: withdrawn if it was still queued (not applied), else with its
     *         outcome unknown (it may still commit)
     */
    public <R> QueryFuture<R> write(Query<R> query) {
        return writer.write(query);
    }

    /**
     * The database's own counters, read now without waiting for the writer: what {@code /metrics}
     * reports as {@code kiln_db_*}. {@code db.stats().commits} is the commits since open;
     * {@link DbStats} names each figure and its unit.
     *
     * @return counters since open: commits, writes, batch sizes, map size, read transactions (also after {@link #close})
     */
    public DbStats stats() {
        return writer.stats(engine.stats());
    }

    /**
     * Stops accepting writes, commits every write already queued, waits for reads in flight, and
     * closes the engine. Idempotent.
     *
     * @throws IllegalStateException on the writer thread (in a write future's callback)
     */
    @Override
    public void close() {
        if (writer.isWriterThread()) {
            throw new IllegalStateException("db.close() from a write future's callback would wait for the writer thread,"
                + " which is running that callback; close from another thread");
        }
        if (!state.close()) return;
        catalog.stopSweeper();
        writer.shutdownAndDrain();
        reads.stop();
        if (deadline != null) deadline.stop();
        feeds.close();
        reads.closeEngine();
    }

    /**
     * Checks what a health endpoint reports: the database is open, a read transaction begins (the
     * environment answers reads), and the writer thread is running and not stuck: it has been in
     * its current batch for less than {@link Builder#writerStallLimit} (a commit that never returns,
     * a write query that never ends). Cheap: one pooled read transaction, on the calling thread: on
     * an engine over the network (PostgreSQL) a server that does not answer holds the caller until
     * the engine gives up; a server answering requests uses {@link #health(Duration)}.
     *
     * @return healthy, or the first problem found
     */
    public DbHealth health() {
        DbHealth state = state();
        if (state != null) return state;
        try {
            reads.now(this::probe);
        } catch (Exception e) {
            return DbHealth.problem("the database does not answer reads: " + e.getMessage());
        }
        return DbHealth.ok();
    }

    /**
     * {@link #health()} without holding the caller, within a deadline: the read goes through
     * {@link #read} (on PostgreSQL, to a read thread: a fiber or a virtual thread awaits the
     * future), and one that has not answered within {@code within} is the problem reported (a
     * database server that is paused or cut off answers nothing, and a monitor must hear so in time).
     *
     * @param within how long the read may take, > 0
     * @return a future that completes within about {@code within}, never exceptionally
     */
    public CompletableFuture<DbHealth> health(Duration within) {
        if (within.isNegative() || within.isZero()) throw new IllegalArgumentException("within must be positive, got " + within);
        DbHealth state = state();
        if (state != null) return CompletableFuture.completedFuture(state);
        long ms = within.toMillis();
        return read(this::probe).copy().orTimeout(ms, TimeUnit.MILLISECONDS).handle((ok, failure) -> {
            if (failure == null) return DbHealth.ok();
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            return DbHealth.problem(cause instanceof TimeoutException
                ? "the database did not answer a read within " + ms + " ms (" + engine + "; " + stats().queued + " writes waiting)"
                : "the database does not answer reads: " + cause.getMessage());
        });
    }

    /** The read of {@link #health}: one key of {@value Catalog#META}, so that an engine over the network makes a round trip. */
    private Object probe(Txn txn) {
        return catalog.probe(txn);
    }

    /** @return the first problem {@link #health} finds without reading, or null */
    private DbHealth state() {
        if (state.isClosed()) return DbHealth.problem("the database is closed");
        DbException.Fatal f = state.fatal();
        if (f != null) return DbHealth.problem(f.getMessage());
        if (!writer.isAlive()) return DbHealth.problem("the database's writer thread is not running");
        long busy = writer.busyNanos(System.nanoTime());
        if (busy > writerStallNanos) {
            return DbHealth.problem("the database's writer has been in one batch for " + busy / 1_000_000 + " ms, "
                + stats().queued + " writes waiting");
        }
        return null;
    }

    /**
     * Writes a compacted copy of the database into {@code target} (created if missing; it must be
     * empty), while reads and writes go on ({@link KvEngine#backup}; an engine without files to copy,
     * PostgreSQL, refuses): it first commits a backup mark (one durable write to the table
     * {@value KvEngine#BACKUP_MARKS}), then the engine copies the snapshot of one read transaction, so
     * the copy holds every write whose future completed before the call, and no write half-applied.
     * The copy is then flushed to disk and read back before this returns: every entry of every table,
     * and the mark (the engine may begin the copy's read transaction outside kiln's snapshot guard, so
     * the copy proves it is at least as new as the call). On LMDB the copy is
     * {@code target/data.mdb}; to restore, stop the server and put it in place of the data
     * directory's.
     *
     * @return the copy's file
     * @throws DbException.BackupFailed when {@code target} is not an empty directory, the mark cannot
     *         be written (disk full: then copy the data files with the server stopped), the copy
     *         fails or does not read back; a partial copy is removed
     * @throws UnsupportedOperationException when the engine keeps no files to copy
     * @throws DbException.Closed after {@link #close}
     */
    public Path backup(Path target) {
        long mark = markBackup();
        return reads.whileOpen(() -> engine.backup(target, mark));
    }

    /**
     * Commits the next backup mark ({@link KvEngine#BACKUP_MARKS}) through the writer, after every
     * write acknowledged before the call; a copy that holds this mark holds a snapshot at least that new.
     *
     * @return the mark the copy must hold
     */
    private long markBackup() {
        Table<String, Long> marks = table(KvEngine.BACKUP_MARKS, Codec.STRING, Codec.LONG);
        try {
            return write(txn -> {
                long mark = marks.get(txn, KvEngine.BACKUP_MARK_KEY, 0L) + 1;
                marks.put(txn, KvEngine.BACKUP_MARK_KEY, mark);
                return mark;
            }).join();
        } catch (CompletionException e) {
            throw new DbException.BackupFailed("backup of " + location() + " could not write its mark (a backup begins with"
                + " one small durable write; with the disk full, stop the server and copy the data files instead): "
                + e.getCause().getMessage(), e.getCause());
        }
    }

    /**
     * Reads the whole database in one snapshot and checks it: every table the engine holds (opened
     * by this process or not), every entry in key order, each table's entry count against the count
     * its record holds (where the engine keeps counts: LMDB), and every built {@link Index} declared in this process against its
     * table ({@link Index#verify}). What an operator runs after a crash, and what the power-cut test
     * runs after every cut. It reads every page of the database. Where reads go to read threads
     * (PostgreSQL) the walk is one read, bounded by {@link Builder#deadline}: verify a large
     * database there with a database opened with a longer deadline.
     *
     * @return each table's (and index's) name and entry count, in the engine's order of names
     * @throws DbException.Corrupt naming the first inconsistency found
     * @throws DbException.Closed  after {@link #close}
     */
    public Map<String, Long> verify() {
        state.checkOpen();
        try {
            Map<String, KvSpace> spaces = catalog.spaces();
            List<Index<?, ?, ?>> built = catalog.builtIndexes();
            return read(txn -> {
                Map<String, Long> counts = new java.util.LinkedHashMap<>();
                for (Map.Entry<String, KvSpace> e : spaces.entrySet()) counts.put(e.getKey(), engine.verify(txn.kv, e.getValue()));
                for (Index<?, ?, ?> index : built) index.verify(txn);
                return counts;
            }).join();
        } catch (DbException e) {
            throw e;
        } catch (RuntimeException e) {
            Throwable cause = e instanceof CompletionException ? e.getCause() : e;
            if (cause instanceof DbException d) throw d;
            throw new DbException.Corrupt("database " + location() + " does not verify: " + cause.getMessage(), cause);
        }
    }

    /** @return true once {@link #close} has begun */
    public boolean isClosed() {
        return state.isClosed();
    }

    /** {@link Builder#deadline}'s default: 5 s. */
    public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(5);

    /**
     * Settings for {@link Db}; every one has a default that suits a 1 GB VPS. The engine's own
     * settings (LMDB's map size and reader slots, PostgreSQL's read connections) are the engine's:
     * in its URL, or in its own builder ({@link Db#builder(KvEngine)}).
     */
    public static final class Builder {
        /** The engine's URL, opened by {@link #open}; null when {@link #engine} was given. */
        private final String url;
        private final KvEngine engine;
        private int maxBatch = 1024;
        private int queueCapacity = 16384;
        private long writerStallNanos = 10_000_000_000L;
        private int maxWatches = 10_000;
        private Duration deadline = DEFAULT_DEADLINE;
        private Runnable betweenCommitAndPublish;
        private java.util.function.Consumer<DbException.Fatal> onFatal;

        private Builder(String url, KvEngine engine) {
            this.url = url;
            this.engine = engine;
        }

        /**
         * How long a query's caller waits at most (default 5 s; {@link Duration#ZERO}: without end). A
         * write, and a read that waits for a read thread (over PostgreSQL; where reads run inline on
         * their caller, as on LMDB, a read has no deadline), whose future has not completed this long after the call
         * fails with {@link DbException.DeadlineExceeded} (an HTTP layer answers 503 with
         * {@code Retry-After: 1}), saying what became of it: a write still queued is withdrawn and
         * never runs (not applied); one the writer has begun may still commit (its outcome is
         * unknown; if it commits, it is published to its change feeds as usual); a read is
         * abandoned. The engine is told too ({@link KvEngine#deadline}): PostgreSQL ends a read
         * statement running a second past it. Checked every {@value Deadline#TICK_MS} ms, by one thread.
         *
         * @param deadline zero, or {@value Deadline#TICK_MS} ms to one day
         * @throws IllegalArgumentException outside those
         */
        public Builder deadline(Duration deadline) {
            if (!deadline.isZero() && (deadline.toMillis() < Deadline.TICK_MS || deadline.compareTo(Duration.ofDays(1)) > 0)) {
                throw new IllegalArgumentException("deadline must be zero (none) or " + Deadline.TICK_MS + " ms to one day, got " + deadline);
            }
            this.deadline = deadline;
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

        /**
         * Called once, on a thread of its own, when the database becomes unusable
         * ({@link DbException.Fatal}); a server exits there so that its supervisor restarts it
         * ({@code kiln.server.Launcher} does, with status 74). Default: nothing (every query fails
         * with the error, and {@link Db#health} reports it).
         */
        public Builder onFatal(java.util.function.Consumer<DbException.Fatal> listener) {
            this.onFatal = listener;
            return this;
        }

        /** For tests (this package): {@code hook} runs on the writer thread between a durable commit and the publishing of its change sets. */
        Builder betweenCommitAndPublish(Runnable hook) {
            this.betweenCommitAndPublish = hook;
            return this;
        }

        /**
         * Opens the database: the engine first, when the builder was given its URL (LMDB creates the
         * directory and its files if missing), then kiln's own tables in it.
         *
         * @throws IllegalArgumentException when no engine on the class path takes the URL
         * @throws DbException when the engine cannot open its data; an engine this call opened is closed again
         */
        public Db open() {
            return new Db(this);
        }
    }
}

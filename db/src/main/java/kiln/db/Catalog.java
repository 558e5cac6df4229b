package kiln.db;

import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.function.BiFunction;

/**
 * What a database holds, by name: its tables (plain and expiring, with the sweeper of expired rows),
 * their change feeds, indexes and sequences, and its own table of settings ({@value #META}: the
 * continuation secret, which tables expire, how far each index's build got). Opening one creates
 * its key space on the writer thread, alone, so that reads never go back in time. {@link Db} is the
 * façade over it.
 */
final class Catalog {
    /** The table of the database's own settings: name → bytes. */
    static final String META = "kiln.meta";

    private final KvEngine engine;
    private final DbState state;
    private final Writer writer;
    private final Reads reads;
    private final Feeds feeds;
    private final WatchBudget watchBudget;
    /** The table of the database's own settings and states: {@value #META}. */
    private final Table<String, byte[]> meta;
    private final Continuations continuations;
    private final OnlineIndexer indexer;
    /** Every table opened, by name: a table with a change feed must be one object (it records its writes). */
    private final Map<String, Table<?, ?>> tables = new HashMap<>();
    /** Every index declared, by name. */
    private final Map<String, Index<?, ?, ?>> indexes = new HashMap<>();
    /** The table of every {@link Sequence}, opened on first use. */
    private Table<String, Long> sequences;
    /** Deletes expired rows of expiring tables; null until one is opened. */
    private Sweeper sweeper;

    /** Opens the settings' table (creating it and the continuation secret on a new database). */
    Catalog(KvEngine engine, DbState state, Writer writer, Reads reads, Feeds feeds, WatchBudget watchBudget) {
        this.engine = engine;
        this.state = state;
        this.writer = writer;
        this.reads = reads;
        this.feeds = feeds;
        this.watchBudget = watchBudget;
        this.meta = new Table<>(META, openSpace(META), Codec.STRING, Codec.BYTES, null);
        this.indexer = new OnlineIndexer(writer, reads, meta);
        this.continuations = new Continuations(secret());
    }

    private static final String SECRET = "continuation-secret";

    /**
     * @return the database's secret for signing continuations: 32 random bytes made once, the first
     *         time the database is opened, and kept in {@value #META}
     */
    private byte[] secret() {
        byte[] secret = reads.read(txn -> meta.get(txn, SECRET)).join();
        if (secret != null) return secret;
        return alone(txn -> {
            byte[] made = meta.get(txn, SECRET);  // another process may have made it meanwhile
            if (made == null) {
                made = new byte[32];
                new java.security.SecureRandom().nextBytes(made);
                meta.put(txn, SECRET, made);
            }
            return made;
        });
    }

    /**
     * Runs {@code query} on the writer thread in a write transaction of its own ({@link Writer#submitAlone})
     * and waits for its commit.
     *
     * @throws RuntimeException the query's failure, unwrapped
     */
    private <R> R alone(Query<R> query) {
        try {
            return writer.submitAlone(query).join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    /** The {@value #META} key that marks a table as expiring: its values begin with their expiry. */
    private static String expiringKey(String table) {
        return "expiring:" + table;
    }

    /** {@link Db#table} and {@link Db#expiringTable}. */
    synchronized <K, V> Table<K, V> table(String name, Codec<K> keys, Codec<V> values, boolean expiring, java.time.Duration defaultTtl) {
        state.checkOpen();
        if (writer.isWriterThread()) {
            throw new IllegalStateException("db.table() cannot be called inside a write query or a write future's callback"
                + " (it waits for the writer thread); open tables at start-up");
        }
        Table<?, ?> known = tables.get(name);
        if (known != null && known.keys() == keys && known.values() == values && known.isExpiring() == expiring
                && (!expiring || known.defaultTtlMicros() == micros(defaultTtl))) {
            @SuppressWarnings("unchecked") Table<K, V> same = (Table<K, V>) known;
            return same;
        }
        if (known != null && (known.isRecorded() || known.isIndexed() || known.isExpiring() != expiring)) {
            throw new IllegalStateException("table '" + name + "' is open already with a change feed, an index or another expiry,"
                + " which the Table object it was opened as keeps: open the table once (with the same codec objects) and share that object");
        }
        if (indexes.containsKey(name)) throw new IllegalArgumentException("'" + name + "' is an index's name");
        KvSpace space = openSpace(name);
        Table<String, byte[]> marks = meta;
        boolean marked = reads.read(txn -> marks.get(txn, expiringKey(name)) != null).join();
        if (marked != expiring) {
            if (!expiring) {
                throw new IllegalStateException("table '" + name + "' holds rows that expire: open it with db.expiringTable(...)");
            }
            alone(txn -> {  // mark it expiring, if it is empty: a table's rows have an expiry or none, all of them
                try (KvCursor rows = txn.kv.range(space, null, null, false, 1)) {
                    if (rows.next()) {
                        throw new IllegalStateException("table '" + name + "' has rows without an expiry: an expiring table must start empty");
                    }
                }
                marks.put(txn, expiringKey(name), new byte[] {1});
                return null;
            });
        }
        Table<K, V> table = expiring
            ? new Table<>(name, space, keys, values, continuations, openSpace(EXPIRY_PREFIX + name), micros(defaultTtl))
            : new Table<>(name, space, keys, values, continuations);
        tables.putIfAbsent(name, table);
        if (expiring) sweeper().add(table);
        return table;
    }

    /** @return the sweeper of expired rows, started on first use */
    private synchronized Sweeper sweeper() {
        if (sweeper == null) sweeper = new Sweeper(reads, writer, state);
        return sweeper;
    }

    /** The prefix of an expiring table's schedule's name. */
    static final String EXPIRY_PREFIX = "kiln.expiry.";

    private static long micros(java.time.Duration d) {
        return d == null ? 0 : Math.max(1, d.toNanos() / 1_000);
    }

    /**
     * Opens (creating if missing) the key space {@code name} on the writer thread, alone: creating
     * one commits a write transaction (on LMDB, {@code mdb_dbi_open} with {@code MDB_CREATE}), and
     * every commit goes through the writer, so that reads never go back in time.
     */
    private KvSpace openSpace(String name) {
        return alone(txn -> engine.space(txn.kv, name, true));
    }

    /** {@link Db#changeFeed}. */
    <K, V> ChangeFeed<K, V> changeFeed(Table<K, V> table, int window) {
        if (window < 1) throw new IllegalArgumentException("window must be >= 1, got " + window);
        ChangeFeed<K, V> feed;
        synchronized (this) {
            state.checkOpen();
            if (tables.get(table.name()) != table) {
                throw new IllegalArgumentException("table " + table + " was not opened by this database (or was opened again since):"
                    + " open it once and pass that object");
            }
            ChangeFeed<K, V> open = feeds.of(table);
            if (open != null) {
                if (open.window() != window) {
                    throw new IllegalArgumentException("the change feed of '" + table.name() + "' is open with window " + open.window());
                }
                return open;
            }
            Table<Long, ChangeFeed.Logged<K, V>> log = table(ChangeFeed.LOG_PREFIX + table.name(), Codec.LONG,
                new ChangeFeed.LogCodec<>(table.keys(), table.values()), false, null);
            feed = new ChangeFeed<>(state, reads, watchBudget, feeds.wakes(), table, log, window);
            feeds.add(feed);
        }
        ChangeFeed<K, V> opened = feed;
        // On the writer thread, between two write queries: exactly the writes after this one are recorded.
        writer.write(txn -> {
            opened.start(txn);
            table.record(opened::record);
            return null;
        }).join();
        return feed;
    }

    /** @return the keys function of an index with one key (or none) per row */
    static <I, K, V> BiFunction<K, V, Collection<I>> one(
            BiFunction<? super K, ? super V, ? extends I> key) {
        return (k, v) -> {
            I i = key.apply(k, v);
            return i == null ? List.of() : List.of(i);
        };
    }

    /** {@link Db#index}, {@link Db#indexMany} and {@link Db#uniqueIndex}: declares the index, then starts its {@link OnlineIndexer}. */
    <I, K, V> Index<I, K, V> index(Table<K, V> table, String name, Codec<I> keys, boolean unique,
                                   BiFunction<? super K, ? super V, ? extends Collection<? extends I>> extractor) {
        Index<I, K, V> index;
        synchronized (this) {
            state.checkOpen();
            if (writer.isWriterThread()) throw new IllegalStateException("declare indexes at start-up, not on the writer thread");
            if (tables.get(table.name()) != table) {
                throw new IllegalArgumentException("table " + table + " was not opened by this database (or was opened again since):"
                    + " open it once and pass that object");
            }
            Index<?, ?, ?> known = indexes.get(name);
            if (known != null) {
                if (known.table() != table || known.isUnique() != unique) {
                    throw new IllegalArgumentException("index '" + name + "' is declared already, as " + known);
                }
                @SuppressWarnings("unchecked") Index<I, K, V> same = (Index<I, K, V>) known;
                return same;
            }
            if (tables.containsKey(name)) throw new IllegalArgumentException("'" + name + "' is a table's name; give the index its own");
            index = new Index<>(name, table, keys, unique, extractor, openSpace(name), continuations);
            indexes.put(name, index);
        }
        indexer.start(table, IndexMaintainer.of(index));
        return index;
    }

    /** {@link Db#sequence}. */
    synchronized Sequence sequence(String name) {
        if (sequences == null) sequences = table(Sequence.TABLE, Codec.STRING, Codec.LONG, false, null);
        return new Sequence(sequences, name);
    }

    /**
     * @return every space the engine holds (opened by this process or not), by name in the engine's
     *         order: an open table's own, else the engine's handle
     */
    Map<String, KvSpace> spaces() {
        return alone(txn -> {
            Map<String, KvSpace> all = new LinkedHashMap<>();
            for (String name : engine.spaceNames(txn.kv)) {
                Table<?, ?> known;
                synchronized (this) {
                    known = tables.get(name);
                }
                all.put(name, known != null ? known.space : engine.space(txn.kv, name, false));
            }
            return all;
        });
    }

    /** @return the indexes declared in this process that are built */
    synchronized List<Index<?, ?, ?>> builtIndexes() {
        return indexes.values().stream().filter(Index::isReady).toList();
    }

    /** The read of a health check: one key of {@value #META}, so that an engine over the network makes a round trip. */
    Object probe(Txn txn) {
        return meta.get(txn, SECRET);
    }

    /** Stops the sweeper of expired rows, if one started. */
    void stopSweeper() {
        Sweeper s;
        synchronized (this) {
            s = sweeper;
        }
        if (s != null) s.stop();
    }
}

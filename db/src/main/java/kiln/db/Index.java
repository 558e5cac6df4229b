package kiln.db;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * A secondary index of a {@link Table}: its rows by another key, taken from each row by an
 * extractor (one row may give several index keys, or none), kept in the same write transaction as
 * every put and delete of the table, as FoundationDB's Record Layer keeps its indexes. A unique
 * index refuses a write that would give two rows one index key ({@link DbException.UniqueViolation},
 * an HTTP 409). Declare it at start-up with {@link Db#index}, {@link Db#indexMany} or
 * {@link Db#uniqueIndex}:
 *
 * <pre>{@code
 * Table<Tuple, Message> messages = db.table("messages", Codec.TUPLE, MESSAGE);
 * Index<String, Tuple, Message> byAuthor = db.index(messages, "messages.by-author", Codec.STRING, (key, m) -> m.author());
 * Page<Tuple, Message> theirs = db.read(txn -> byAuthor.range(txn, Range.closed("ada", "ada").limit(20))).join();
 * }</pre>
 *
 * <h2>Storage</h2>
 * The index is a key space of its own whose keys are {@code Tuple.of(indexKey, rowKey).pack()} with
 * both as byte strings (FoundationDB's tuple encoding escapes them, so the entries sort by index key,
 * then row key, whatever the codecs) and whose values are empty. A lookup reads the entries of
 * one index key, then each row from the table. The entries are kept, and built, by the index's
 * kind's maintainer (IndexMaintainer); the index itself only reads them.
 *
 * <h2>Building</h2>
 * An index declared on a table that has rows is built online: the writer thread adds the entries of
 * {@value #BUILD_BATCH} rows per write transaction, between other writes, keeping its progress in the
 * database (a restart goes on from there), while every write to the table keeps the index from the
 * moment it is declared. Until it is built, reads of the index fail with
 * {@link DbException.IndexNotReady}; {@link #ready} completes when it is.
 *
 * <p>The extractor must give the same keys for the same row every time: an index whose extractor
 * changes must get a new name (the old entries are not rebuilt). {@link #verify} checks the index
 * against its table.
 *
 * @param <I> the index key type, encoded with the index's codec
 * @param <K> the table's key type
 * @param <V> the table's value type
 */
public final class Index<I, K, V> {
    /** Rows whose entries one build transaction adds. */
    static final int BUILD_BATCH = 1_000;

    /** Entries are encoded into a per-thread direct buffer, as table keys are. */
    private static final ThreadLocal<ByteBuffer> ENTRY_BUFFER =
        ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(Table.MAX_KEY_BYTES).order(ByteOrder.BIG_ENDIAN));

    private final String name;
    private final Table<K, V> table;
    private final Codec<I> keys;
    private final boolean unique;
    private final BiFunction<? super K, ? super V, ? extends Collection<? extends I>> extractor;
    final KvSpace space;
    private final Continuations continuations;
    private final QueryFuture<Void> ready = new QueryFuture<>();
    /** Why the build stopped, once it did. */
    private volatile Throwable buildFailure;

    Index(String name, Table<K, V> table, Codec<I> keys, boolean unique,
          BiFunction<? super K, ? super V, ? extends Collection<? extends I>> extractor, KvSpace space, Continuations continuations) {
        this.name = name;
        this.table = table;
        this.keys = keys;
        this.unique = unique;
        this.extractor = extractor;
        this.space = space;
        this.continuations = continuations;
    }

    /** @return the index's name: its key space's in the engine */
    public String name() {
        return name;
    }

    /** @return the table it indexes */
    public Table<K, V> table() {
        return table;
    }

    /** @return whether two rows may not share an index key */
    public boolean isUnique() {
        return unique;
    }

    /**
     * Waits for an index declared on a table with rows to be built (online, by the writer thread,
     * {@value #BUILD_BATCH} rows per write): {@code byEmail.ready().join()} at start-up, before
     * serving what reads it; until then its reads fail with {@link DbException.IndexNotReady} (503).
     *
     * @return a future that completes once the index holds every row of its table (at once for an
     *         index built before, or declared on an empty table), or fails with why its build stopped
     *         ({@link DbException.UniqueViolation} for rows that break a unique index); it completes on
     *         the writer thread
     */
    public QueryFuture<Void> ready() {
        return ready;
    }

    /** @return whether {@link #ready} completed without error */
    public boolean isReady() {
        return ready.isDone() && !ready.isCompletedExceptionally();
    }

    /**
     * Reads the row an index key names: {@code User u = byEmail.get(txn, "ada@example.org");} One
     * range step in the index and one get in the table.
     *
     * @param txn the query's transaction
     * @param key the index key
     * @return the value of the row with index key {@code key} (of a non-unique index, the first such
     *         row in row-key order), or null when there is none
     * @throws DbException.IndexNotReady while the index is being built
     */
    public V get(Txn txn, I key) {
        K row = key(txn, key);
        return row == null ? null : table.get(txn, row);
    }

    /**
     * @return the key of the row with index key {@code key} (of a non-unique index, the first in
     *         row-key order), or null when there is none
     * @throws DbException.IndexNotReady while the index is being built
     */
    public K key(Txn txn, I key) {
        checkReady();
        byte[] p = packed(encode(key));
        try (KvCursor r = txn.kv.range(space, Keys.next(p, (byte) 1), Keys.next(p, (byte) 2), false, 1)) {
            while (r.next()) {
                K row = table.decodeKey(rowKey(r.key()));
                // an expired row keeps its entries until the sweeper deletes both
                if (!table.isExpiring() || table.get(txn, row) != null) return row;
            }
            return null;
        }
    }

    /**
     * Reads one page of the rows whose index keys are in {@code range}, in index-key order (then
     * row-key order), or reversed; as {@link Table#range}, with the same continuations. A prefix
     * range needs an index key codec whose prefixes mean something ({@link Codec#TUPLE},
     * {@link Codec#STRING}).
     *
     * @throws DbException.IndexNotReady    while the index is being built
     * @throws DbException.BadContinuation  as {@link Table#range}
     */
    public Page<K, V> range(Txn txn, Range<I> range) {
        Bounds b = bounds(range);
        List<Page.Row<K, V>> rows = new ArrayList<>(Math.min(range.limit, 64));
        byte[][] last = {null};
        boolean more = walk(txn, range, b, (entry, row) -> {
            if (rows.size() == range.limit) return false;
            K k = table.decodeKey(row);
            V v = table.get(txn, k);
            if (v == null && table.isExpiring()) return true;  // expired: the sweeper deletes it and its entries
            if (v == null) throw new DbException.Corrupt("index '" + name + "' holds an entry for row " + k + " of '" + table.name()
                + "', which has no such row: run Db.verify()", null);
            rows.add(new Page.Row<>(k, v));
            last[0] = entry;
            return true;
        });
        String next = more ? continuations.token(b.fingerprint(), last[0]) : null;
        return new Page<>(Collections.unmodifiableList(rows), next);
    }

    /**
     * Counts the rows whose index keys are in {@code range} (after its continuation; its limit does
     * not apply), reading only the index: the rows by one author, say. (In an expiring table, rows
     * that expired count until the sweeper deletes them, within a second or so.)
     *
     * @throws DbException.IndexNotReady while the index is being built
     */
    public long count(Txn txn, Range<I> range) {
        long[] n = {0};
        walk(txn, range, bounds(range), (entry, row) -> {
            n[0]++;
            return true;
        });
        return n[0];
    }

    /**
     * The entries of index key {@code i} are {@code [P 0x01, P 0x02)} where {@code P} is
     * {@code Tuple.of(i).pack()} (a row key's byte string follows with its type code 0x01); an
     * index key that goes on from {@code i} (its byte string longer) sorts at {@code P 0xFF} and up,
     * outside. A prefix {@code p} of index keys is {@code [P', strinc(P'))}, {@code P'} being
     * {@code P} without its terminating zero.
     */
    private Bounds bounds(Range<I> range) {
        checkReady();
        byte[] prefix = range.prefix == null ? null : encode(range.prefix);
        byte[] begin = range.begin == null ? null : encode(range.begin);
        byte[] end = range.end == null ? null : encode(range.end);
        java.util.function.Supplier<byte[]> fingerprint = () ->
            Continuations.fingerprint(name, prefix, range.reverse);
        byte[] after = range.after == null ? null : continuations.lastKey(range.after, fingerprint.get());
        byte[] lo = null;
        byte[] hi = null;
        if (prefix != null) {
            byte[] p = packed(prefix);
            lo = java.util.Arrays.copyOf(p, p.length - 1);
            hi = Keys.strinc(lo);
        }
        if (begin != null) lo = Keys.max(lo, Keys.next(packed(begin), (byte) (range.beginInclusive ? 1 : 2)));
        if (end != null) hi = Keys.min(hi, Keys.next(packed(end), (byte) (range.endInclusive ? 2 : 1)));
        if (after != null) {
            if (range.reverse) hi = Keys.min(hi, after);
            else lo = Keys.max(lo, Keys.next(after));
        }
        return new Bounds(lo, hi, prefix, fingerprint);
    }

    /** What {@link #walk} does with each entry: its bytes and its row key's; false to stop there. */
    private interface EntryVisitor {
        boolean visit(byte[] entry, byte[] rowKey);
    }

    /** @return true when {@code visitor} stopped the walk at an entry of the range (there is more) */
    private boolean walk(Txn txn, Range<I> range, Bounds b, EntryVisitor visitor) {
        try (KvCursor r = txn.kv.range(space, b.begin, b.end, range.reverse, range.limit + 1)) {
            while (r.next()) {
                byte[] entry = Keys.toArray(r.key());
                Tuple t = Tuple.unpack(entry);
                if (b.prefix != null && !keys.extendsPrefix(ByteBuffer.wrap((byte[]) t.get(0)), b.prefix.length)) {
                    if (range.reverse) continue;
                    return false;
                }
                if (!visitor.visit(entry, (byte[]) t.get(1))) return true;
            }
            return false;
        }
    }

    /**
     * Checks the index against its table in {@code txn}'s snapshot: every row's entries are there,
     * and the index holds no other entry.
     *
     * @return the number of entries
     * @throws DbException.Corrupt naming the first row or entry that does not agree
     */
    public long verify(Txn txn) {
        long[] expected = {0};
        try (KvCursor r = txn.kv.range(table.space, null, null, false, 0)) {  // every row held, expired ones too
            while (r.next()) {
                byte[] row = Keys.toArray(r.key());
                K k = table.decodeKey(row);
                for (byte[] i : keysOf(k, table.decodeValue(r.value()))) {
                    expected[0]++;
                    if (txn.kv.get(space, entry(i, row)) == null) {
                        throw new DbException.Corrupt("index '" + name + "' lacks the entry of row " + k + " of '" + table.name() + "'", null);
                    }
                }
            }
        }
        long held = txn.kv.count(space);
        if (held != expected[0]) {
            throw new DbException.Corrupt("index '" + name + "' holds " + held + " entries, but the rows of '" + table.name()
                + "' give " + expected[0], null);
        }
        return held;
    }

    void built() {
        ready.succeed(null);
    }

    void buildFailed(Throwable why) {
        buildFailure = why;
        ready.fail(why);
    }

    private void checkReady() {
        if (isReady()) return;
        Throwable why = buildFailure;
        if (why != null) {
            throw new DbException.IndexNotReady("index '" + name + "' of '" + table.name() + "' could not be built: " + why.getMessage(), why);
        }
        throw new DbException.IndexNotReady("index '" + name + "' of '" + table.name() + "' is being built; wait for Index.ready()", null);
    }

    /** @return the encoded index keys a row gives, each once (null keys give none) */
    List<byte[]> keysOf(K key, V value) {
        Collection<? extends I> given = extractor.apply(key, value);
        if (given == null || given.isEmpty()) return List.of();
        List<byte[]> out = new ArrayList<>(given.size());
        Set<ByteBuffer> seen = given.size() > 1 ? new HashSet<>() : null;
        for (I i : given) {
            if (i == null) continue;
            byte[] e = encode(i);
            if (seen == null || seen.add(ByteBuffer.wrap(e))) out.add(e);
        }
        return out;
    }

    /** @return the index key encoded in {@code b} */
    I decodeKey(ByteBuffer b) {
        return keys.read(b);
    }

    private byte[] encode(I key) {
        int size = keys.size(key);
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.BIG_ENDIAN);
        keys.write(key, b);
        return b.array();
    }

    /** @return {@code Tuple.of(indexKey).pack()}: the start of the index key's entries */
    static byte[] packed(byte[] indexKey) {
        return Tuple.of((Object) indexKey).pack();
    }

    /** @return the entry of index key {@code i} and row key {@code row}, in the per-thread direct buffer */
    ByteBuffer entry(byte[] i, byte[] row) {
        byte[] packed = Tuple.of(i, row).pack();
        if (packed.length > Table.MAX_KEY_BYTES) {
            throw new IllegalArgumentException("index '" + name + "': an entry of " + packed.length + " bytes (index key " + i.length
                + " bytes, row key " + row.length + " bytes, escaped) is over " + Table.MAX_KEY_BYTES + " bytes");
        }
        ByteBuffer b = ENTRY_BUFFER.get().clear();
        return b.put(packed).flip();
    }

    /** @return the row key's bytes of an entry */
    static byte[] rowKey(ByteBuffer entry) {
        return (byte[]) Tuple.unpack(Keys.toArray(entry)).get(1);
    }

    @Override
    public String toString() {
        return "Index(" + name + " of " + table.name() + (unique ? ", unique" : "") + ")";
    }
}

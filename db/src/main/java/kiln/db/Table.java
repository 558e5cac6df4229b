package kiln.db;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.BiPredicate;

/**
 * A typed table: a sorted map from {@code K} to {@code V}, stored as one key space of the database's
 * {@link KvEngine} (an LMDB database, "DBI", by default), keys in the byte order of their encoding.
 * Obtain one from {@link Db#table}; use it inside queries:
 *
 * <pre>{@code
 * Table<Integer, String> names = db.table("names", Codec.INT, Codec.STRING);
 * db.write(txn -> { names.put(txn, 1, "one"); return null; }).join();
 * String one = db.read(txn -> names.get(txn, 1)).join();
 * }</pre>
 *
 * <p>Tables are thread-safe; all state lives in the transaction.
 *
 * @param <K> key type, encoded with the key codec (at most 511 bytes)
 * @param <V> value type
 */
public final class Table<K, V> {
    /** The most bytes an encoded key may have: LMDB's default MDB_MAXKEYSIZE, kept on every engine. */
    public static final int MAX_KEY_BYTES = 511;
    /**
     * The most bytes an encoded value may have, on every engine: 16 MiB. A value is copied while it
     * is written (into PostgreSQL's statements; into a change feed's log and its subscribers), so a
     * larger one belongs in a file, with its name in the table; {@link #put} refuses it with
     * {@link DbException.ValueTooLarge} rather than let it exhaust a small server's heap.
     */
    public static final int MAX_VALUE_BYTES = 16 << 20;

    /** Keys are encoded into a per-thread direct buffer: no allocation per call. */
    private static final ThreadLocal<ByteBuffer> KEY_BUFFER =
        ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(MAX_KEY_BYTES).order(ByteOrder.BIG_ENDIAN));

    private final String name;
    /** Where the engine keeps the table. */
    final KvSpace space;
    private final Codec<K> keys;
    private final Codec<V> values;
    /** Signs and checks {@link #range}'s continuations with the database's secret. */
    private final Continuations continuations;
    /**
     * The expiry schedule of an expiring table ({@link Db#expiringTable}), null for another: keys
     * {@code expiresAt} (8 bytes, microseconds since the epoch, big-endian) followed by the row's key,
     * empty values. An expiring table's values begin with their {@code expiresAt} (0: never).
     */
    final KvSpace expiries;
    /** The expiry of a put that gives none, microseconds; 0 for none. */
    private final long defaultTtlMicros;
    /** The upkeep of the table's indexes, replaced whole on the writer thread as one is declared ({@link Db#index}): each kept from then on. */
    private volatile List<Upkeep<K, V>> indexes = List.of();
    /** Set once, on the writer thread, by {@link Db#changeFeed}: from then on every put and delete is recorded. */
    private volatile Recorder<K, V> feed;

    /** The bytes an expiring table's value begins with: when it expires. */
    private static final int EXPIRY_BYTES = Long.BYTES;

    Table(String name, KvSpace space, Codec<K> keys, Codec<V> values, Continuations continuations) {
        this(name, space, keys, values, continuations, null, 0);
    }

    Table(String name, KvSpace space, Codec<K> keys, Codec<V> values, Continuations continuations, KvSpace expiries, long defaultTtlMicros) {
        this.name = name;
        this.continuations = continuations;
        this.space = space;
        this.keys = keys;
        this.values = values;
        this.expiries = expiries;
        this.defaultTtlMicros = defaultTtlMicros;
    }

    /** @return the table's name: its key space's in the engine */
    public String name() {
        return name;
    }

    /** @return whether its rows may expire ({@link Db#expiringTable}) */
    public boolean isExpiring() {
        return expiries != null;
    }

    /** @return the expiry of a put that gives none, microseconds; 0 for none */
    long defaultTtlMicros() {
        return defaultTtlMicros;
    }

    /** @return whether an index was declared on it */
    boolean isIndexed() {
        return !indexes.isEmpty();
    }

    /**
     * Reads one row, in a read or a write query: {@code Todo t = db.read(txn -> todos.get(txn, id)).join();}.
     * In a write query it sees the query's own earlier puts and deletes.
     *
     * @param txn the query's transaction
     * @param key the row's key
     * @return the value stored under {@code key}, or null if there is none (or it expired)
     * @throws IllegalArgumentException when the key's encoding is empty or longer than
     *         {@link #MAX_KEY_BYTES}
     */
    public V get(Txn txn, K key) {
        ByteBuffer found = txn.kv.get(space, encodeKey(key, KEY_BUFFER.get()));
        if (found == null || expiries != null && expired(txn, found)) return null;
        return decodeValue(found);
    }

    /**
     * Reads one row with a default, for counters and the like:
     * {@code long next = hits.get(txn, page, 0L) + 1;}.
     *
     * @param txn     the query's transaction
     * @param key     the row's key
     * @param missing what to return when there is no row
     * @return the value stored under {@code key}, or {@code missing} if there is none (or it expired)
     */
    public V get(Txn txn, K key, V missing) {
        V v = get(txn, key);
        return v == null ? missing : v;
    }

    /**
     * Stores {@code value} under {@code key}, replacing any previous value, and keeps the table's
     * {@link Index indexes} in the same transaction. In an expiring table the row expires after the
     * table's default, if it has one.
     *
     * @throws DbException.UniqueViolation when a unique index refuses the value's key (nothing is
     *         changed; the write query fails unless it catches it)
     * @throws DbException.ValueTooLarge when the encoded value has more than {@link #MAX_VALUE_BYTES}
     *         (nothing is changed)
     * @throws IllegalStateException in a read transaction
     */
    public void put(Txn txn, K key, V value) {
        write(txn, key, value, defaultTtlMicros == 0 ? 0 : txn.nowMicros() + defaultTtlMicros);
    }

    /**
     * Stores {@code value} under {@code key} until {@code ttl} from now: then reads no longer see it,
     * and the database's sweeper deletes it (a fed table's feed records that delete as
     * {@link ChangeSet.Change#expired expired}). A session, a typing indicator, a rate-limit window.
     *
     * @param ttl how long the row lives, > 0
     * @throws IllegalStateException when the table is not expiring ({@link Db#expiringTable}), or in a read transaction
     * @throws DbException.UniqueViolation as {@link #put(Txn, Object, Object)}
     */
    public void put(Txn txn, K key, V value, java.time.Duration ttl) {
        if (expiries == null) {
            throw new IllegalStateException("table '" + name + "' has no expiry: open it with db.expiringTable(...) to put rows that expire");
        }
        if (ttl.isNegative() || ttl.isZero()) throw new IllegalArgumentException("ttl must be positive, got " + ttl);
        write(txn, key, value, txn.nowMicros() + Math.max(1, ttl.toNanos() / 1_000));
    }

    /** @param expiresAt microseconds since the epoch, 0 for never (only in an expiring table) */
    private void write(Txn txn, K key, V value, long expiresAt) {
        txn.checkWritable("put");
        int size = values.size(value);
        if (size > MAX_VALUE_BYTES) {
            throw new DbException.ValueTooLarge("value for table '" + name + "' is " + size + " bytes; values are at most "
                + MAX_VALUE_BYTES + " bytes (" + (MAX_VALUE_BYTES >> 20) + " MiB): keep a larger one in a file and its name in the table", size, MAX_VALUE_BYTES);
        }
        List<Upkeep<K, V>> indexed = indexes;
        byte[] row = indexed.isEmpty() && expiries == null ? null : bytes(key);
        if (row != null) {
            // what the table holds, expired or not, read before this write changes anything (LMDB's
            // buffers are valid until the transaction's next write)
            ByteBuffer old = txn.kv.get(space, keyBuffer(row));
            V oldValue = old == null || indexed.isEmpty() ? null : decodeValue(old.duplicate());
            long oldExpiresAt = old == null || expiries == null ? 0 : expiresAt(old);
            for (Upkeep<K, V> i : indexed) i.check(txn, row, key, value);
            for (Upkeep<K, V> i : indexed) i.update(txn, row, key, oldValue, value);
            if (oldExpiresAt != 0 && oldExpiresAt != expiresAt) txn.kv.delete(expiries, scheduled(oldExpiresAt, row));
            if (expiresAt != 0) txn.kv.reserve(expiries, scheduled(expiresAt, row), 0);
        }
        ByteBuffer k = encodeKey(key, KEY_BUFFER.get());
        int header = expiries == null ? 0 : EXPIRY_BYTES;
        ByteBuffer slot = txn.kv.reserve(space, k, header + size);
        slot.order(ByteOrder.BIG_ENDIAN);
        if (header != 0) slot.putLong(expiresAt);
        int start = slot.position();
        values.write(value, slot);
        if (slot.position() - start != size) {
            throw new IllegalStateException("codec for table '" + name + "' wrote " + (slot.position() - start)
                + " bytes but its size() promised " + size);
        }
        if (feed != null) {
            byte[] stored = new byte[size];
            slot.get(start, stored);
            feed.record(txn, recorded(k, stored, false));
        }
    }

    /**
     * Removes {@code key}, and its entries from the table's indexes.
     *
     * @return true if the key was present (and had not expired)
     * @throws IllegalStateException in a read transaction
     */
    public boolean delete(Txn txn, K key) {
        txn.checkWritable("delete");
        if (expiries != null || !indexes.isEmpty()) return remove(txn, bytes(key), key, false);
        ByteBuffer k = encodeKey(key, KEY_BUFFER.get());
        boolean deleted = txn.kv.delete(space, k);
        if (deleted && feed != null) feed.record(txn, recorded(k, null, false));
        return deleted;
    }

    /**
     * Deletes row {@code row} (its key {@code key}, decoded, or null to decode it here) with its index
     * entries and expiry, recording the delete for the feed.
     *
     * @param expired true for the sweeper's delete of an expired row
     * @return true when a row that had not expired was deleted
     */
    private boolean remove(Txn txn, byte[] row, K key, boolean expired) {
        ByteBuffer old = txn.kv.get(space, keyBuffer(row));
        if (old == null) return false;
        // everything read from the old value before the first write (LMDB's buffers are valid until then)
        boolean live = expiries == null || !expired(txn, old);
        long expiresAt = expiries == null ? 0 : expiresAt(old);
        List<Upkeep<K, V>> indexed = indexes;
        V oldValue = indexed.isEmpty() ? null : decodeValue(old.duplicate());
        if (expiresAt != 0) txn.kv.delete(expiries, scheduled(expiresAt, row));
        if (!indexed.isEmpty()) {
            K k = key != null ? key : decodeKey(row);
            for (Upkeep<K, V> i : indexed) i.update(txn, row, k, oldValue, null);
        }
        ByteBuffer k = keyBuffer(row);
        txn.kv.delete(space, k);
        if (feed != null) feed.record(txn, recorded(k, null, expired));
        return live;
    }

    /** Rows the sweeper deletes in one write query, at most. */
    static final int SWEEP_BATCH = 1_000;

    /**
     * The sweeper's step, in a write query: deletes up to {@code max} rows whose expiry has passed,
     * soonest first.
     *
     * @return how many it deleted: {@code max} when there may be more
     */
    int sweep(Txn txn, int max) {
        byte[] now = dueBound(txn);
        List<byte[]> due = new ArrayList<>();
        try (KvCursor r = txn.kv.range(expiries, null, now, false, max)) {
            while (due.size() < max && r.next()) due.add(Keys.toArray(r.key()));
        }
        for (byte[] entry : due) {
            byte[] row = java.util.Arrays.copyOfRange(entry, EXPIRY_BYTES, entry.length);
            long expiresAt = ByteBuffer.wrap(entry).getLong();
            ByteBuffer stored = txn.kv.get(space, keyBuffer(row));
            if (stored != null && expiresAt(stored) == expiresAt) {
                remove(txn, row, null, true);
            } else {
                txn.kv.delete(expiries, keyBuffer(entry));  // an entry a put left behind (it should not)
            }
        }
        return due.size();
    }

    /** @return whether a row's expiry has passed, for {@code txn} (a read: the sweeper writes only when one has) */
    boolean hasDue(Txn txn) {
        try (KvCursor r = txn.kv.range(expiries, null, dueBound(txn), false, 1)) {
            return r.next();
        }
    }

    /** @return the expiry schedule's bound after every entry due at {@code txn}'s time */
    private static byte[] dueBound(Txn txn) {
        byte[] now = new byte[EXPIRY_BYTES];
        ByteBuffer.wrap(now).putLong(txn.nowMicros() + 1);
        return now;
    }

    /** @return whether the stored value {@code v} (at its position, not moved) of an expiring table has expired for {@code txn} */
    private static boolean expired(Txn txn, ByteBuffer v) {
        long expiresAt = expiresAt(v);
        return expiresAt != 0 && expiresAt <= txn.nowMicros();
    }

    /** @return the expiry an expiring table's stored value {@code v} begins with (its position does not move) */
    private static long expiresAt(ByteBuffer v) {
        return v.order(ByteOrder.BIG_ENDIAN).getLong(v.position());
    }

    /** @return the expiry schedule's key of row {@code row} expiring at {@code expiresAt}, in a direct buffer */
    private ByteBuffer scheduled(long expiresAt, byte[] row) {
        if (EXPIRY_BYTES + row.length > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("key for expiring table '" + name + "' is " + row.length + " bytes; its keys are 1.."
                + (MAX_KEY_BYTES - EXPIRY_BYTES) + " bytes");
        }
        return ByteBuffer.allocateDirect(EXPIRY_BYTES + row.length).putLong(expiresAt).put(row).flip();
    }

    /** @return {@code row}, an encoded key, in the per-thread key buffer (no allocation; the next encode reuses it) */
    private static ByteBuffer keyBuffer(byte[] row) {
        return KEY_BUFFER.get().clear().put(row).flip();
    }

    /**
     * Adds {@code delta} to the number stored under {@code key} (0 when there is none) and stores the
     * sum: a counter row, such as a room's message count, kept in the same write as the rows it
     * counts. Atomic as every write query is: the one writer thread runs them one at a time.
     *
     * @return the new value
     * @throws IllegalStateException in a read transaction, or when the table's values are not
     *         {@link Codec#LONG}
     */
    public long add(Txn txn, K key, long delta) {
        if (values != (Codec<?>) Codec.LONG) {
            throw new IllegalStateException("add() needs a table of Codec.LONG values; '" + name + "' has " + values);
        }
        @SuppressWarnings("unchecked") Table<K, Long> counters = (Table<K, Long>) this;
        long sum = counters.get(txn, key, 0L) + delta;
        counters.put(txn, key, sum);
        return sum;
    }

    /**
     * A put or delete for the change feed, from the bytes the table got: the feed and its log say
     * what the table holds even when the caller changes its key or value object afterwards, and a
     * codec that cannot read its own bytes fails this query, not the batch's commit.
     *
     * @param key     the encoded key (copied here)
     * @param value   the stored value's bytes, or null for a delete
     * @param expired true for the sweeper's delete of an expired row
     */
    private Recorded<K, V> recorded(ByteBuffer key, byte[] value, boolean expired) {
        byte[] k = new byte[key.remaining()];
        key.get(key.position(), k);
        return new Recorded<>(k, value, new ChangeSet.Change<>(keys.read(wrap(k)), value == null ? null : values.read(wrap(value)), expired));
    }

    private static ByteBuffer wrap(byte[] bytes) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
    }

    /**
     * One index's upkeep, which the table runs inside the write query that changes a row: an
     * {@link IndexMaintainer}, one per kind of index. The table knows only this, not the index.
     */
    interface Upkeep<K, V> {
        /**
         * Before any index of the table changes: refuses a put of {@code value} under {@code key}
         * (its bytes {@code row}) that the index cannot take.
         *
         * @throws DbException.UniqueViolation from a unique index whose key another row has
         */
        void check(Txn txn, byte[] row, K key, V value);

        /** Keeps the index's entries for row {@code row} (key {@code key}) changed from {@code old} to {@code value} (either null for none). */
        void update(Txn txn, byte[] row, K key, V old, V value);
    }

    /**
     * Where the table records each put and delete of a write query, as it makes it: its change
     * feed's ({@link ChangeFeed}). The table knows only this, not the feed.
     */
    interface Recorder<K, V> {
        /** Records {@code change}, made in the write query of {@code txn}. */
        void record(Txn txn, Recorded<K, V> change);
    }

    /** Keeps an index, through its {@code upkeep}, from the next write on: called inside a write query, on the writer thread. */
    void index(Upkeep<K, V> upkeep) {
        List<Upkeep<K, V>> more = new ArrayList<>(indexes);
        more.add(upkeep);
        indexes = List.copyOf(more);
    }

    /**
     * Switches recording on, to {@code feed} ({@link Db#changeFeed}): called inside a write query, so
     * exactly the writes after it are recorded.
     */
    void record(Recorder<K, V> feed) {
        this.feed = feed;
    }

    /** @return whether a change feed records the table's writes */
    boolean isRecorded() {
        return feed != null;
    }

    Codec<K> keys() {
        return keys;
    }

    Codec<V> values() {
        return values;
    }

    /**
     * Counts the table's rows: {@code long pages = db.read(txn -> hits.count(txn)).join();}. Part of
     * it: {@link #count(Txn, Range)}.
     *
     * @param txn the query's transaction
     * @return the number of entries: O(1) on LMDB, which keeps the count; in an expiring table, those
     *         that have not expired, counted one by one
     */
    public long count(Txn txn) {
        if (expiries == null) return txn.kv.count(space);
        return visit(txn, null, null, false, (k, v) -> true);
    }

    /**
     * Visits entries in key order, starting at the first key {@code >= from} (or the first key
     * when {@code from} is null), until the visitor returns false or the table ends.
     *
     * @param visitor called with each decoded key and value; return false to stop
     * @return the number of entries visited
     */
    public long scan(Txn txn, K from, BiPredicate<? super K, ? super V> visitor) {
        return visit(txn, from == null ? null : bytes(from), null, false, visitor);
    }

    /** Visits every entry in key order; see {@link #scan}. */
    public long scan(Txn txn, BiPredicate<? super K, ? super V> visitor) {
        return scan(txn, null, visitor);
    }

    /**
     * Visits entries in reverse key order, starting at the last key {@code <= from} (or the last key
     * when {@code from} is null), until the visitor returns false or the table's start: "the newest
     * first" for keys from a {@link Sequence}.
     *
     * @return the number of entries visited
     */
    public long scanBackward(Txn txn, K from, BiPredicate<? super K, ? super V> visitor) {
        return visit(txn, null, from == null ? null : Keys.next(bytes(from)), true, visitor);
    }

    /** Visits the rows of {@code [begin, end)} until the visitor returns false; see {@link KvTxn#range}. */
    private long visit(Txn txn, byte[] begin, byte[] end, boolean reverse, BiPredicate<? super K, ? super V> visitor) {
        long n = 0;
        try (KvCursor r = txn.kv.range(space, begin, end, reverse, 0)) {
            while (r.next()) {
                if (expiries != null && expired(txn, r.value())) continue;
                n++;
                if (!visitor.test(decodeKey(r), decodeValue(r))) break;
            }
        }
        return n;
    }

    /**
     * Visits, in key order, the entries whose encoded key starts with the encoding of {@code prefix}:
     * with {@link Codec#STRING} keys, {@code scanPrefix(txn, "user:", ...)} visits every key that
     * begins with "user:"; with {@link Codec#TUPLE} keys, {@code scanPrefix(txn, Tuple.of(room), ...)}
     * visits {@code Tuple.of(room)} and every tuple that extends it, and no other room's (see
     * {@link Codec#extendsPrefix}). (With the fixed-size number codecs a prefix is a whole key.)
     *
     * @return the number of entries visited
     */
    public long scanPrefix(Txn txn, K prefix, BiPredicate<? super K, ? super V> visitor) {
        byte[] p = bytes(prefix);
        long n = 0;
        try (KvCursor r = txn.kv.range(space, p, Keys.strinc(p), false, 0)) {
            while (r.next() && keys.extendsPrefix(r.key(), p.length)) {
                if (expiries != null && expired(txn, r.value())) continue;
                n++;
                if (!visitor.test(decodeKey(r), decodeValue(r))) break;
            }
        }
        return n;
    }

    /**
     * Reads one page of {@code range}: up to its limit of rows in key order (or reversed), starting
     * after the continuation it carries, if any. Pages of one range follow each other without a gap
     * or a repeat as long as the rows between them are not changed; each page reads the table as it
     * is then (no transaction spans two pages).
     *
     * <pre>{@code
     * Page<Tuple, Message> page = db.read(txn -> messages.range(txn,
     *     Range.prefix(Tuple.of(room)).reverse().limit(20).after(req.param("after")))).join();
     * }</pre>
     *
     * @return the page; its {@link Page#continuation()} is null when the range has no more rows
     * @throws DbException.BadContinuation when the range's continuation was not made by this
     *         database for this listing: this table, the same prefix and direction (an HTTP layer
     *         answers 400)
     */
    public Page<K, V> range(Txn txn, Range<K> range) {
        Bounds b = bounds(range);
        List<Page.Row<K, V>> rows = new ArrayList<>(Math.min(range.limit, 64));
        boolean more = walk(txn, range, b, r -> {
            if (rows.size() == range.limit) return false;
            rows.add(new Page.Row<>(decodeKey(r), decodeValue(r)));
            return true;
        });
        // the token carries the last row's key, encoded again (the engine's buffer has moved on)
        String next = more ? continuations.token(b.fingerprint(), bytes(rows.get(rows.size() - 1).key())) : null;
        return new Page<>(Collections.unmodifiableList(rows), next);
    }

    /**
     * Counts the rows of {@code range} (after its continuation, if it has one; its limit does not
     * apply), decoding neither keys nor values: the size of a room, of an index entry's rows.
     *
     * @return the number of rows; it takes time in proportion to it
     * @throws DbException.BadContinuation as {@link #range}
     */
    public long count(Txn txn, Range<K> range) {
        long[] n = {0};
        walk(txn, range, bounds(range), r -> {
            n[0]++;
            return true;
        });
        return n[0];
    }

    /**
     * Narrows {@code range} to the engine's one kind of range: an inclusive bound becomes
     * {@code [key, ...)} or {@code [..., key + 0x00)}, an exclusive one the other way round (no key
     * lies between a key and itself followed by a zero byte); a prefix {@code p} is {@code [p, strinc(p))};
     * a continuation's last key moves the bound on its side past it.
     */
    private Bounds bounds(Range<K> range) {
        byte[] prefix = range.prefix == null ? null : bytes(range.prefix);
        byte[] begin = range.begin == null ? null : bytes(range.begin);
        byte[] end = range.end == null ? null : bytes(range.end);
        java.util.function.Supplier<byte[]> fingerprint = () ->
            Continuations.fingerprint(name, prefix, range.reverse);
        byte[] after = range.after == null ? null : continuations.lastKey(range.after, fingerprint.get());
        byte[] lo = Keys.max(prefix, begin == null || range.beginInclusive ? begin : Keys.next(begin));
        byte[] hi = Keys.min(prefix == null ? null : Keys.strinc(prefix), end == null || !range.endInclusive ? end : Keys.next(end));
        if (after != null) {
            if (range.reverse) hi = Keys.min(hi, after);
            else lo = Keys.max(lo, Keys.next(after));
        }
        return new Bounds(lo, hi, prefix, fingerprint);
    }

    /** What {@link #walk} does at each row of the range: false to stop there. */
    private interface RowVisitor {
        boolean visit(KvCursor row);
    }

    /** @return true when {@code visitor} stopped the walk at a row of the range (there is more) */
    private boolean walk(Txn txn, Range<K> range, Bounds b, RowVisitor visitor) {
        try (KvCursor r = txn.kv.range(space, b.begin, b.end, range.reverse, range.limit + 1)) {
            while (r.next()) {
                // keys that go on a tuple prefix's last element (Codec#extendsPrefix) sort at the top of its keys
                if (b.prefix != null && !keys.extendsPrefix(r.key(), b.prefix.length)) {
                    if (range.reverse) continue;
                    return false;
                }
                if (expiries != null && expired(txn, r.value())) continue;
                if (!visitor.visit(r)) return true;
            }
            return false;
        }
    }

    /** @return {@code key} encoded, in an array of its own */
    byte[] bytes(K key) {
        return Keys.toArray(encodeKey(key, KEY_BUFFER.get()));
    }

    /** @return the smallest key, or null when the table is empty (of rows that have not expired) */
    public K firstKey(Txn txn) {
        return endKey(txn, false);
    }

    /** @return the largest key (the newest id of a {@link Sequence}), or null when the table is empty */
    public K lastKey(Txn txn) {
        return endKey(txn, true);
    }

    private K endKey(Txn txn, boolean last) {
        try (KvCursor r = txn.kv.range(space, null, null, last, 1)) {
            while (r.next()) {
                if (expiries == null || !expired(txn, r.value())) return decodeKey(r);
            }
            return null;
        }
    }

    private K decodeKey(KvCursor r) {
        return keys.read(r.key().order(ByteOrder.BIG_ENDIAN));
    }

    K decodeKey(byte[] key) {
        return keys.read(wrap(key));
    }

    private V decodeValue(KvCursor r) {
        return decodeValue(r.value());
    }

    /** @return the value of the stored bytes {@code value} (after an expiring table's expiry); moves its position */
    V decodeValue(ByteBuffer value) {
        if (expiries != null) value.position(value.position() + EXPIRY_BYTES);
        return values.read(value.order(ByteOrder.BIG_ENDIAN));
    }

    private ByteBuffer encodeKey(K key, ByteBuffer buf) {
        if (key == null) throw new NullPointerException("null key for table '" + name + "'");
        int size = keys.size(key);
        if (size > MAX_KEY_BYTES || size == 0) {
            throw new IllegalArgumentException("key for table '" + name + "' is " + size
                + " bytes; keys are 1.." + MAX_KEY_BYTES + " bytes");
        }
        buf.clear();
        keys.write(key, buf);
        buf.flip();
        return buf;
    }

    @Override
    public String toString() {
        return "Table(" + name + ")";
    }
}

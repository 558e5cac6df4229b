package kiln.db;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.BiPredicate;

import org.lmdbjava.Cursor;
import org.lmdbjava.Dbi;
import org.lmdbjava.GetOp;
import org.lmdbjava.LmdbException;
import org.lmdbjava.SeekOp;

/**
 * A typed LMDB database ("DBI") inside the environment: a sorted map from {@code K} to {@code V}.
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
    /** LMDB's default MDB_MAXKEYSIZE. */
    static final int MAX_KEY_BYTES = 511;

    /** Keys are encoded into a per-thread direct buffer: no allocation per call. */
    private static final ThreadLocal<ByteBuffer> KEY_BUFFER =
        ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(MAX_KEY_BYTES).order(ByteOrder.BIG_ENDIAN));

    private final String name;
    final Dbi<ByteBuffer> dbi;
    private final Codec<K> keys;
    private final Codec<V> values;
    /** Signs and checks {@link #range}'s continuations with the database's secret. */
    private final Continuations continuations;
    /** Set once, on the writer thread, by {@link Db#changeFeed}: from then on every put and delete is recorded. */
    private volatile ChangeFeed<K, V> feed;

    Table(String name, Dbi<ByteBuffer> dbi, Codec<K> keys, Codec<V> values, Continuations continuations) {
        this.name = name;
        this.continuations = continuations;
        this.dbi = dbi;
        this.keys = keys;
        this.values = values;
    }

    /** @return the table's name in the LMDB environment */
    public String name() {
        return name;
    }

    /** @return the value stored under {@code key}, or null if there is none */
    public V get(Txn txn, K key) {
        ByteBuffer found;
        try {
            found = dbi.get(txn.lmdb, encodeKey(key, KEY_BUFFER.get()));
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
        return found == null ? null : values.read(found.order(ByteOrder.BIG_ENDIAN));
    }

    /** @return the value stored under {@code key}, or {@code missing} if there is none */
    public V get(Txn txn, K key, V missing) {
        V v = get(txn, key);
        return v == null ? missing : v;
    }

    /**
     * Stores {@code value} under {@code key}, replacing any previous value.
     *
     * @throws IllegalStateException in a read transaction
     */
    public void put(Txn txn, K key, V value) {
        txn.checkWritable("put");
        ByteBuffer k = encodeKey(key, KEY_BUFFER.get());
        int size = values.size(value);
        ByteBuffer slot;
        try {
            slot = dbi.reserve(txn.lmdb, k, size);
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
        slot.order(ByteOrder.BIG_ENDIAN);
        int start = slot.position();
        values.write(value, slot);
        if (slot.position() - start != size) {
            throw new IllegalStateException("codec for table '" + name + "' wrote " + (slot.position() - start)
                + " bytes but its size() promised " + size);
        }
        if (feed != null) {
            byte[] stored = new byte[size];
            slot.get(start, stored);
            txn.changed(this, recorded(k, stored));
        }
    }

    /**
     * Removes {@code key}.
     *
     * @return true if the key was present
     * @throws IllegalStateException in a read transaction
     */
    public boolean delete(Txn txn, K key) {
        txn.checkWritable("delete");
        ByteBuffer k = encodeKey(key, KEY_BUFFER.get());
        boolean deleted;
        try {
            deleted = dbi.delete(txn.lmdb, k);
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
        if (deleted && feed != null) txn.changed(this, recorded(k, null));
        return deleted;
    }

    /**
     * A put or delete for the change feed, from the bytes the table got: the feed and its log say
     * what the table holds even when the caller changes its key or value object afterwards, and a
     * codec that cannot read its own bytes fails this query, not the batch's commit.
     *
     * @param key   the encoded key (the shared key buffer: copied here)
     * @param value the stored value's bytes, or null for a delete
     */
    private Recorded<K, V> recorded(ByteBuffer key, byte[] value) {
        byte[] k = new byte[key.remaining()];
        key.get(key.position(), k);
        return new Recorded<>(k, value, new ChangeSet.Change<>(keys.read(wrap(k)), value == null ? null : values.read(wrap(value))));
    }

    private static ByteBuffer wrap(byte[] bytes) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
    }

    /** @return the table's change feed, or null when {@link Db#changeFeed} was not called for it */
    ChangeFeed<K, V> feed() {
        return feed;
    }

    /** Switches recording on: called inside a write query, so exactly the writes after it are recorded. */
    void feed(ChangeFeed<K, V> feed) {
        this.feed = feed;
    }

    Codec<K> keys() {
        return keys;
    }

    Codec<V> values() {
        return values;
    }

    /** @return the number of entries (O(1): LMDB keeps the count) */
    public long count(Txn txn) {
        try {
            return dbi.stat(txn.lmdb).entries;
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
    }

    /**
     * Visits entries in key order, starting at the first key {@code >= from} (or the first key
     * when {@code from} is null), until the visitor returns false or the table ends.
     *
     * @param visitor called with each decoded key and value; return false to stop
     * @return the number of entries visited
     */
    public long scan(Txn txn, K from, BiPredicate<? super K, ? super V> visitor) {
        long n = 0;
        try (Cursor<ByteBuffer> c = dbi.openCursor(txn.lmdb)) {
            boolean more = from == null ? c.seek(SeekOp.MDB_FIRST) : c.get(encodeKey(from, KEY_BUFFER.get()), GetOp.MDB_SET_RANGE);
            while (more) {
                n++;
                if (!visitor.test(decodeKey(c), decodeValue(c))) break;
                more = c.next();
            }
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
        return n;
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
        long n = 0;
        try (Cursor<ByteBuffer> c = dbi.openCursor(txn.lmdb)) {
            boolean more;
            if (from == null) {
                more = c.last();
            } else {
                ByteBuffer start = copyOf(encodeKey(from, KEY_BUFFER.get()));
                more = c.get(start, GetOp.MDB_SET_RANGE);
                if (!more) more = c.last();
                else if (!c.key().equals(start)) more = c.prev();
            }
            while (more) {
                n++;
                if (!visitor.test(decodeKey(c), decodeValue(c))) break;
                more = c.prev();
            }
        } catch (LmdbException e) {
            throw txn.failure(e);
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
        long n = 0;
        ByteBuffer p = copyOf(encodeKey(prefix, KEY_BUFFER.get()));
        int length = p.remaining();
        try (Cursor<ByteBuffer> c = dbi.openCursor(txn.lmdb)) {
            boolean more = c.get(p, GetOp.MDB_SET_RANGE);
            while (more) {
                ByteBuffer key = c.key();
                if (!startsWith(key, p) || !keys.extendsPrefix(key, length)) break;
                n++;
                if (!visitor.test(decodeKey(c), decodeValue(c))) break;
                more = c.next();
            }
        } catch (LmdbException e) {
            throw txn.failure(e);
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
     *         database for this table and range (an HTTP layer answers 400)
     */
    public Page<K, V> range(Txn txn, Range<K> range) {
        Bounds b = bounds(range);
        List<Page.Row<K, V>> rows = new ArrayList<>(Math.min(range.limit, 64));
        boolean more = walk(txn, range, b, c -> {
            if (rows.size() == range.limit) return false;
            rows.add(new Page.Row<>(decodeKey(c), decodeValue(c)));
            return true;
        });
        // the token carries the last row's key, encoded again (the cursor's buffer has moved on)
        String next = more ? continuations.token(b.fingerprint, bytes(rows.get(rows.size() - 1).key())) : null;
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
        walk(txn, range, bounds(range), c -> {
            n[0]++;
            return true;
        });
        return n[0];
    }

    /**
     * A range's bounds encoded, its fingerprint, and the key its continuation ended with; with a
     * buffer over each bound, made once for the comparisons of every row.
     */
    private static final class Bounds {
        final byte[] prefix, begin, end, fingerprint, after;
        final ByteBuffer prefixBuf, beginBuf, endBuf, afterBuf;

        Bounds(byte[] prefix, byte[] begin, byte[] end, byte[] fingerprint, byte[] after) {
            this.prefix = prefix;
            this.begin = begin;
            this.end = end;
            this.fingerprint = fingerprint;
            this.after = after;
            this.prefixBuf = view(prefix);
            this.beginBuf = view(begin);
            this.endBuf = view(end);
            this.afterBuf = view(after);
        }

        private static ByteBuffer view(byte[] bytes) {
            return bytes == null ? null : ByteBuffer.wrap(bytes);
        }
    }

    /** @return whether {@code key} begins with {@code prefix}'s bytes; neither buffer's position moves */
    private static boolean startsWith(ByteBuffer key, ByteBuffer prefix) {
        int m = key.mismatch(prefix);
        return m == -1 || m == prefix.remaining();
    }

    private Bounds bounds(Range<K> range) {
        byte[] prefix = range.prefix == null ? null : bytes(range.prefix);
        byte[] begin = range.begin == null ? null : bytes(range.begin);
        byte[] end = range.end == null ? null : bytes(range.end);
        byte[] fingerprint = Continuations.fingerprint(name, prefix, begin, range.beginInclusive, end, range.endInclusive, range.reverse);
        byte[] after = range.after == null ? null : continuations.lastKey(range.after, fingerprint);
        return new Bounds(prefix, begin, end, fingerprint, after);
    }

    /** What {@link #walk} does at each row of the range, the cursor on it: false to stop there. */
    private interface RowVisitor {
        boolean visit(Cursor<ByteBuffer> c);
    }

    /** @return true when {@code visitor} stopped the walk at a row of the range (there is more) */
    private boolean walk(Txn txn, Range<K> range, Bounds b, RowVisitor visitor) {
        try (Cursor<ByteBuffer> c = dbi.openCursor(txn.lmdb)) {
            boolean at = range.reverse ? seekLast(c, b.prefix, b.end, range.endInclusive, b.after) : seekFirst(c, b.prefix, b.begin, b.after);
            while (at) {
                int place = place(c.key(), range, b);
                if (place == STOP) return false;
                if (place == IN && !visitor.visit(c)) return true;
                at = range.reverse ? c.prev() : c.next();
            }
            return false;
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
    }

    private static final int IN = 0;
    private static final int SKIP = 1;
    private static final int STOP = 2;

    /** @return where {@code key}, met in the range's direction, stands: in it, to be skipped, or past it */
    private int place(ByteBuffer key, Range<K> range, Bounds b) {
        if (b.prefixBuf != null) {
            if (!startsWith(key, b.prefixBuf)) return STOP;
            // keys that go on a prefix's last element sort at the top of its keys
            if (!keys.extendsPrefix(key, b.prefix.length)) return range.reverse ? SKIP : STOP;
        }
        if (b.beginBuf != null) {
            int c = Walk.compareUnsigned(key, b.beginBuf);
            if (c < 0 || c == 0 && !range.beginInclusive) return range.reverse ? STOP : SKIP;
        }
        if (b.endBuf != null) {
            int c = Walk.compareUnsigned(key, b.endBuf);
            if (c > 0 || c == 0 && !range.endInclusive) return range.reverse ? SKIP : STOP;
        }
        if (b.afterBuf != null) {
            int c = Walk.compareUnsigned(key, b.afterBuf);
            if (range.reverse ? c >= 0 : c <= 0) return SKIP;
        }
        return IN;
    }

    /** Positions at the first key not below every lower bound (prefix, begin, continuation). */
    private static boolean seekFirst(Cursor<ByteBuffer> c, byte[] prefix, byte[] begin, byte[] after) {
        byte[] target = max(max(prefix, begin), after);
        return target == null ? c.first() : c.get(direct(target), GetOp.MDB_SET_RANGE);
    }

    /** Positions at the last key not above every upper bound (the prefix's end, end, continuation). */
    private static boolean seekLast(Cursor<ByteBuffer> c, byte[] prefix, byte[] end, boolean endInclusive, byte[] after) {
        byte[] prefixEnd = prefix == null ? null : strinc(prefix);  // exclusive
        byte[] target = null;
        boolean inclusive = false;
        for (byte[] bound : new byte[][] {prefixEnd, end, after}) {
            if (bound == null) continue;
            if (target == null || Arrays.compareUnsigned(bound, target) < 0) {
                target = bound;
                inclusive = bound == end && endInclusive;
            }
        }
        if (target == null) return c.last();
        ByteBuffer t = direct(target);
        if (!c.get(t, GetOp.MDB_SET_RANGE)) return c.last();
        return inclusive && c.key().equals(t) || c.prev();
    }

    private static byte[] max(byte[] a, byte[] b) {
        if (a == null) return b;
        if (b == null) return a;
        return Arrays.compareUnsigned(a, b) >= 0 ? a : b;
    }

    /** @return the first byte string after every string that starts with {@code p} (FoundationDB's strinc), or null for none */
    private static byte[] strinc(byte[] p) {
        int n = p.length;
        while (n > 0 && p[n - 1] == (byte) 0xFF) n--;
        if (n == 0) return null;
        byte[] next = Arrays.copyOf(p, n);
        next[n - 1]++;
        return next;
    }

    private byte[] bytes(K key) {
        return toArray(encodeKey(key, KEY_BUFFER.get()));
    }

    private static byte[] toArray(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.get(b.position(), out);
        return out;
    }

    private static ByteBuffer direct(byte[] bytes) {
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }

    /** @return the smallest key, or null when the table is empty */
    public K firstKey(Txn txn) {
        try (Cursor<ByteBuffer> c = dbi.openCursor(txn.lmdb)) {
            return c.first() ? decodeKey(c) : null;
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
    }

    /** @return the largest key (the newest id of a {@link Sequence}), or null when the table is empty */
    public K lastKey(Txn txn) {
        try (Cursor<ByteBuffer> c = dbi.openCursor(txn.lmdb)) {
            return c.last() ? decodeKey(c) : null;
        } catch (LmdbException e) {
            throw txn.failure(e);
        }
    }

    private K decodeKey(Cursor<ByteBuffer> c) {
        return keys.read(c.key().order(ByteOrder.BIG_ENDIAN));
    }

    private V decodeValue(Cursor<ByteBuffer> c) {
        return values.read(c.val().order(ByteOrder.BIG_ENDIAN));
    }

    /** A copy in a direct buffer of its own: the shared key buffer may be reused while it is needed. */
    private static ByteBuffer copyOf(ByteBuffer key) {
        ByteBuffer copy = ByteBuffer.allocateDirect(key.remaining());
        copy.put(key.duplicate()).flip();
        return copy;
    }

    private ByteBuffer encodeKey(K key, ByteBuffer buf) {
        if (key == null) throw new NullPointerException("null key for table '" + name + "'");
        int size = keys.size(key);
        if (size > MAX_KEY_BYTES || size == 0) {
            throw new IllegalArgumentException("key for table '" + name + "' is " + size
                + " bytes; LMDB keys are 1.." + MAX_KEY_BYTES + " bytes");
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

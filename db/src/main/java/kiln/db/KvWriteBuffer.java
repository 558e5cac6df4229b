package kiln.db;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The writes of a write transaction and of its nested children, kept in memory until the top
 * transaction commits: for an engine whose own transactions cannot nest cheaply (PostgreSQL's
 * savepoints are subtransactions, and more than 64 in one transaction slow every other session), or
 * that pays a round trip per statement. Reads see through it ({@link #get}, {@link #merge}): a
 * transaction reads its own writes, as FoundationDB's client does (its "read your writes" cache).
 * A child's writes go to its parent at {@link #commitToParent} and are dropped otherwise.
 *
 * <p>Not thread-safe: a write transaction is used by the one writer thread.
 */
public final class KvWriteBuffer {
    /** The value of a deleted key (compared by identity). */
    private static final byte[] DELETED = new byte[0];

    private final KvWriteBuffer parent;
    /** This level's writes by space, keys in unsigned byte order. */
    private final Map<KvSpace, TreeMap<byte[], byte[]>> writes = new HashMap<>();

    /** The buffer of a top-level write transaction. */
    public KvWriteBuffer() {
        this(null);
    }

    private KvWriteBuffer(KvWriteBuffer parent) {
        this.parent = parent;
    }

    /** @return the buffer of a nested child of this one */
    public KvWriteBuffer nested() {
        return new KvWriteBuffer(this);
    }

    /** What the buffer knows of one key. */
    public enum Known {
        /** Not written in this transaction: ask the engine. */
        UNKNOWN,
        /** Written: {@link #get}'s value is the key's. */
        WRITTEN,
        /** Deleted in this transaction. */
        DELETED
    }

    /**
     * @return the value this transaction (or a parent) wrote under {@code key}; null when it deleted
     *         the key or did not write it ({@link #known} tells which)
     */
    public byte[] get(KvSpace space, byte[] key) {
        byte[] v = lookup(space, key);
        return v == DELETED ? null : v;
    }

    /** @return whether this transaction or a parent wrote, deleted, or did not touch {@code key} */
    public Known known(KvSpace space, byte[] key) {
        byte[] v = lookup(space, key);
        return v == null ? Known.UNKNOWN : v == DELETED ? Known.DELETED : Known.WRITTEN;
    }

    private byte[] lookup(KvSpace space, byte[] key) {
        for (KvWriteBuffer b = this; b != null; b = b.parent) {
            TreeMap<byte[], byte[]> w = b.writes.get(space);
            byte[] v = w == null ? null : w.get(key);
            if (v != null) return v;
        }
        return null;
    }

    /** @return true when this transaction or a parent wrote or deleted a key of {@code space} */
    public boolean touches(KvSpace space) {
        for (KvWriteBuffer b = this; b != null; b = b.parent) {
            TreeMap<byte[], byte[]> w = b.writes.get(space);
            if (w != null && !w.isEmpty()) return true;
        }
        return false;
    }

    /** @return room for a value of {@code size} bytes under {@code key}, replacing any: see {@link KvTxn#reserve} */
    public ByteBuffer reserve(KvSpace space, byte[] key, int size) {
        byte[] value = new byte[size];
        mine(space).put(key, value);
        return ByteBuffer.wrap(value);
    }

    /** Records that {@code key} is deleted. */
    public void delete(KvSpace space, byte[] key) {
        mine(space).put(key, DELETED);
    }

    private TreeMap<byte[], byte[]> mine(KvSpace space) {
        return writes.computeIfAbsent(space, s -> new TreeMap<>(Arrays::compareUnsigned));
    }

    /** Gives this child's writes to its parent (a child's commit). */
    public void commitToParent() {
        if (parent == null) throw new IllegalStateException("a top-level buffer has no parent");
        writes.forEach((s, w) -> parent.mine(s).putAll(w));
        writes.clear();
    }

    /**
     * @return this (top-level) buffer's writes by space, in key order: a value, or null for a
     *         delete; what the engine applies at commit
     */
    public Map<KvSpace, List<Map.Entry<byte[], byte[]>>> toApply() {
        Map<KvSpace, List<Map.Entry<byte[], byte[]>>> all = new HashMap<>();
        writes.forEach((s, w) -> {
            List<Map.Entry<byte[], byte[]>> list = new ArrayList<>(w.size());
            w.forEach((k, v) -> list.add(new java.util.AbstractMap.SimpleImmutableEntry<>(k, v == DELETED ? null : v)));
            if (!list.isEmpty()) all.put(s, list);
        });
        return all;
    }

    /** @return the writes of this transaction and its parents in {@code [begin, end)}, the nearest winning */
    private NavigableMap<byte[], byte[]> overlay(KvSpace space, byte[] begin, byte[] end) {
        TreeMap<byte[], byte[]> merged = new TreeMap<>(Arrays::compareUnsigned);
        List<KvWriteBuffer> chain = new ArrayList<>();
        for (KvWriteBuffer b = this; b != null; b = b.parent) chain.add(0, b);
        for (KvWriteBuffer b : chain) {
            TreeMap<byte[], byte[]> w = b.writes.get(space);
            if (w == null) continue;
            if (begin != null && end != null) {
                if (Arrays.compareUnsigned(begin, end) < 0) merged.putAll(w.subMap(begin, true, end, false));
            } else if (begin != null) {
                merged.putAll(w.tailMap(begin, true));
            } else if (end != null) {
                merged.putAll(w.headMap(end, false));
            } else {
                merged.putAll(w);
            }
        }
        return merged;
    }

    /**
     * @param committed the engine's entries of {@code [begin, end)} in the transaction's snapshot, in
     *                  the same direction; closed with the returned range
     * @return those entries as this transaction sees them: its writes replace them and its deletes
     *         hide them
     */
    public KvCursor merge(KvSpace space, KvCursor committed, byte[] begin, byte[] end, boolean reverse) {
        NavigableMap<byte[], byte[]> mine = overlay(space, begin, end);
        if (mine.isEmpty()) return committed;
        Iterator<Map.Entry<byte[], byte[]>> over = (reverse ? mine.descendingMap() : mine).entrySet().iterator();
        return new KvCursor() {
            private boolean base = committed.next();
            /** The committed range's entry was handed out: move past it at the next call (its buffers are valid until then). */
            private boolean handedOut;
            private Map.Entry<byte[], byte[]> o = over.next();
            private ByteBuffer key;
            private ByteBuffer value;

            @Override
            public boolean next() {
                if (handedOut) {
                    handedOut = false;
                    base = committed.next();
                }
                while (base || o != null) {
                    int c;
                    if (!base) {
                        c = 1;
                    } else if (o == null) {
                        c = -1;
                    } else {
                        c = compare(committed.key(), o.getKey());
                        if (reverse) c = -c;
                    }
                    if (c < 0) {
                        key = committed.key();
                        value = committed.value();
                        handedOut = true;
                        return true;
                    }
                    if (c == 0) base = committed.next();  // the transaction's write wins
                    byte[] v = o.getValue();
                    key = ByteBuffer.wrap(o.getKey()).asReadOnlyBuffer();
                    value = v == DELETED ? null : ByteBuffer.wrap(v).asReadOnlyBuffer();
                    o = over.hasNext() ? over.next() : null;
                    if (value != null) return true;
                }
                return false;
            }

            @Override
            public ByteBuffer key() {
                return key;
            }

            @Override
            public ByteBuffer value() {
                return value;
            }

            @Override
            public void close() {
                committed.close();
            }
        };
    }

    /** Unsigned byte order of a buffer's remaining bytes against an array's. */
    private static int compare(ByteBuffer a, byte[] b) {
        int n = Math.min(a.remaining(), b.length);
        for (int i = 0; i < n; i++) {
            int c = Integer.compare(a.get(a.position() + i) & 0xff, b[i] & 0xff);
            if (c != 0) return c;
        }
        return Integer.compare(a.remaining(), b.length);
    }
}

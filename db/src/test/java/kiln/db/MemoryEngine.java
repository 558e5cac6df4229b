package kiln.db;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * A {@link KvEngine} in memory, for tests only: it proves that the layers (tables, codecs, ranges,
 * pages, feeds, sequences) need nothing of LMDB, by running their tests on it ({@link Engines}).
 *
 * <p>Multi-version: each key keeps its versions, newest first, each stamped with the commit that
 * made it; a read transaction sees the newest version at or below the commit it began at. A write
 * transaction (and each nested one) keeps its writes in a sorted overlay until it commits into its
 * parent, or, at the top, into the versions under a new commit number, published last. Nothing is
 * ever collected, nothing is durable, nothing is too large. A store lives as long as the JVM and is
 * found again by its directory ({@link #at}), so a test that closes and reopens a database finds
 * its rows, as on disk.
 */
final class MemoryEngine implements KvEngine {
    private static final Map<Path, MemoryEngine> STORES = new ConcurrentHashMap<>();
    /** The value of a deleted key in an overlay (compared by identity). */
    private static final byte[] DELETED = new byte[0];

    private final Map<String, Space> spaces = new ConcurrentHashMap<>();
    /** The newest commit: read transactions begin at it. Written by the one writer thread. */
    private volatile long committed;

    private MemoryEngine() {
    }

    /** @return the store of {@code dir}, made empty on first use */
    static MemoryEngine at(Path dir) {
        return STORES.computeIfAbsent(dir.toAbsolutePath().normalize(), d -> new MemoryEngine());
    }

    /** One version of a key's value: null for a delete. */
    private record Version(long commit, byte[] value, Version older) {
        byte[] at(long snapshot) {
            Version v = this;
            while (v != null && v.commit > snapshot) v = v.older;
            return v == null ? null : v.value;
        }
    }

    /** A space: its rows' versions by key. Identity is equality (a record would hash every row). */
    private static final class Space implements KvSpace {
        private final String name;
        final ConcurrentSkipListMap<byte[], Version> rows = new ConcurrentSkipListMap<>(Arrays::compareUnsigned);

        Space(String name) {
            this.name = name;
        }

        @Override
        public String name() {
            return name;
        }
    }

    @Override
    public KvSpace space(KvTxn txn, String name, boolean create) {
        if (!create) return spaces.get(name);
        return spaces.computeIfAbsent(name, Space::new);
    }

    @Override
    public List<String> spaceNames(KvTxn txn) {
        List<String> names = new ArrayList<>(spaces.keySet());
        names.sort((a, b) -> Arrays.compareUnsigned(a.getBytes(java.nio.charset.StandardCharsets.UTF_8),
            b.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        return names;
    }

    @Override
    public KvTxn beginRead() {
        return new Txn(null, true, committed);
    }

    @Override
    public KvTxn beginWrite() {
        return new Txn(null, false, committed);
    }

    @Override
    public long verify(KvTxn txn, KvSpace space) {
        return txn.count(space);
    }

    @Override
    public Path backup(Path target, long mark) {
        throw new UnsupportedOperationException("the in-memory engine keeps no files to back up");
    }

    @Override
    public String fatalCause(RuntimeException e) {
        return null;
    }

    @Override
    public KvStats stats() {
        return new KvStats(0, 0, 0, 0, 0);
    }

    @Override
    public void close() {
        // the store stays, for a reopen of the same directory
    }

    private final class Txn implements KvTxn {
        private final Txn parent;
        private final boolean readOnly;
        private final long snapshot;
        /** This transaction's own writes, by space; null in a read transaction. */
        private final Map<Space, TreeMap<byte[], byte[]>> writes;

        Txn(Txn parent, boolean readOnly, long snapshot) {
            this.parent = parent;
            this.readOnly = readOnly;
            this.snapshot = snapshot;
            this.writes = readOnly ? null : new HashMap<>();
        }

        @Override
        public boolean isReadOnly() {
            return readOnly;
        }

        /** @return the value as this transaction sees it: its own writes, its parents', then the snapshot */
        private byte[] lookup(Space s, byte[] key) {
            for (Txn t = this; t != null && t.writes != null; t = t.parent) {
                TreeMap<byte[], byte[]> w = t.writes.get(s);
                byte[] v = w == null ? null : w.get(key);
                if (v != null) return v == DELETED ? null : v;
            }
            Version v = s.rows.get(key);
            return v == null ? null : v.at(snapshot);
        }

        @Override
        public ByteBuffer get(KvSpace space, ByteBuffer key) {
            byte[] v = lookup((Space) space, bytes(key));
            return v == null ? null : ByteBuffer.wrap(v).asReadOnlyBuffer();
        }

        /** @return the writes of this transaction and its parents in {@code [begin, end)}, the nearest winning; deletes as {@link #DELETED} */
        private NavigableMap<byte[], byte[]> overlay(Space s, byte[] begin, byte[] end) {
            TreeMap<byte[], byte[]> merged = new TreeMap<>(Arrays::compareUnsigned);
            List<Txn> chain = new ArrayList<>();
            for (Txn t = this; t != null && t.writes != null; t = t.parent) chain.add(0, t);
            for (Txn t : chain) {
                TreeMap<byte[], byte[]> w = t.writes.get(s);
                if (w != null) merged.putAll(sub(w, begin, end));
            }
            return merged;
        }

        /** Walks the committed versions lazily, merged with this transaction's overlay (materialized: it is small). */
        @Override
        public KvRange range(KvSpace space, byte[] begin, byte[] end, boolean reverse, int limitHint) {
            Space s = (Space) space;
            NavigableMap<byte[], Version> committedRows = sub(s.rows, begin, end);
            NavigableMap<byte[], byte[]> mine = readOnly ? new TreeMap<>(Arrays::compareUnsigned) : overlay(s, begin, end);
            Iterator<Map.Entry<byte[], Version>> base = (reverse ? committedRows.descendingMap() : committedRows).entrySet().iterator();
            Iterator<Map.Entry<byte[], byte[]>> over = (reverse ? mine.descendingMap() : mine).entrySet().iterator();
            return new KvRange() {
                private Map.Entry<byte[], Version> b = base.hasNext() ? base.next() : null;
                private Map.Entry<byte[], byte[]> o = over.hasNext() ? over.next() : null;
                private byte[] key;
                private byte[] value;

                @Override
                public boolean next() {
                    while (b != null || o != null) {
                        int c = b == null ? 1 : o == null ? -1 : Arrays.compareUnsigned(b.getKey(), o.getKey());
                        if (reverse && b != null && o != null) c = -c;
                        if (c < 0) {
                            key = b.getKey();
                            value = b.getValue().at(snapshot);
                            b = base.hasNext() ? base.next() : null;
                        } else {
                            if (c == 0) b = base.hasNext() ? base.next() : null;  // the overlay's write wins
                            key = o.getKey();
                            value = o.getValue() == DELETED ? null : o.getValue();
                            o = over.hasNext() ? over.next() : null;
                        }
                        if (value != null) return true;
                    }
                    return false;
                }

                @Override
                public ByteBuffer key() {
                    return ByteBuffer.wrap(key).asReadOnlyBuffer();
                }

                @Override
                public ByteBuffer value() {
                    return ByteBuffer.wrap(value).asReadOnlyBuffer();
                }

                @Override
                public void close() {
                }
            };
        }

        @Override
        public long count(KvSpace space) {
            long n = 0;
            try (KvRange r = range(space, null, null, false, 0)) {
                while (r.next()) n++;
            }
            return n;
        }

        private TreeMap<byte[], byte[]> mine(KvSpace space) {
            if (readOnly) throw new IllegalStateException("a write in a read-only transaction");
            return writes.computeIfAbsent((Space) space, s -> new TreeMap<>(Arrays::compareUnsigned));
        }

        @Override
        public ByteBuffer reserve(KvSpace space, ByteBuffer key, int size) {
            byte[] value = new byte[size];
            mine(space).put(bytes(key), value);
            return ByteBuffer.wrap(value);
        }

        @Override
        public boolean delete(KvSpace space, ByteBuffer key) {
            byte[] k = bytes(key);
            boolean there = lookup((Space) space, k) != null;
            if (there) mine(space).put(k, DELETED);
            return there;
        }

        @Override
        public KvTxn nested() {
            if (readOnly) throw new IllegalStateException("a nested transaction in a read-only one");
            return new Txn(this, false, snapshot);
        }

        @Override
        public void commit() {
            if (readOnly) return;
            if (parent != null) {
                writes.forEach((s, w) -> parent.mine(s).putAll(w));
                return;
            }
            long commit = committed + 1;
            writes.forEach((s, w) -> w.forEach((k, v) ->
                s.rows.compute(k, (key, older) -> new Version(commit, v == DELETED ? null : v, older))));
            committed = commit;
        }

        @Override
        public void close() {
        }
    }

    private static <V> NavigableMap<byte[], V> sub(NavigableMap<byte[], V> m, byte[] begin, byte[] end) {
        if (begin != null && end != null) {
            return Arrays.compareUnsigned(begin, end) >= 0 ? new TreeMap<>(Arrays::compareUnsigned) : m.subMap(begin, true, end, false);
        }
        if (begin != null) return m.tailMap(begin, true);
        if (end != null) return m.headMap(end, false);
        return m;
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.get(b.position(), out);
        return out;
    }
}

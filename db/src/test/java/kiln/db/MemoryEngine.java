package kiln.db;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
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
 * transaction (and each nested one) keeps its writes in a {@link KvWriteBuffer} until it commits into its
 * parent, or, at the top, into the versions under a new commit number, published last. Nothing is
 * ever collected, nothing is durable, nothing is too large. A store lives as long as the JVM and is
 * found again by its directory ({@link #at}), so a test that closes and reopens a database finds
 * its rows, as on disk. {@code memory:DIR} opens it by URL ({@link MemoryEngineProvider}), as a
 * module's engine is opened: the shape of an engine, in the test sources.
 */
final class MemoryEngine implements KvEngine {
    private static final Map<Path, MemoryEngine> STORES = new ConcurrentHashMap<>();

    private final Path dir;
    private final Map<String, Space> spaces = new ConcurrentHashMap<>();
    /** The newest commit: read transactions begin at it. Written by the one writer thread. */
    private volatile long committed;

    private MemoryEngine(Path dir) {
        this.dir = dir;
    }

    /** @return the store of {@code dir}, made empty on first use */
    static MemoryEngine at(Path dir) {
        return STORES.computeIfAbsent(dir.toAbsolutePath().normalize(), MemoryEngine::new);
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
        return new Txn(null, true, committed, true);
    }

    @Override
    public KvTxn beginWrite() {
        return new Txn(new KvWriteBuffer(), false, committed, true);
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

    @Override
    public String location() {
        return "memory:" + dir;
    }

    /** @return {@code the in-memory engine}, for messages */
    @Override
    public String toString() {
        return "the in-memory engine";
    }

    private final class Txn implements KvTxn {
        private final boolean readOnly;
        private final long snapshot;
        /** This transaction's writes (and its parents'); null in a read transaction. */
        private final KvWriteBuffer writes;
        private final boolean top;

        Txn(KvWriteBuffer writes, boolean readOnly, long snapshot, boolean top) {
            this.readOnly = readOnly;
            this.snapshot = snapshot;
            this.writes = writes;
            this.top = top;
        }

        @Override
        public boolean isReadOnly() {
            return readOnly;
        }

        /** @return the value as this transaction sees it: its own writes, its parents', then the snapshot */
        private byte[] lookup(Space s, byte[] key) {
            if (writes != null) {
                switch (writes.known(s, key)) {
                    case WRITTEN: return writes.get(s, key);
                    case DELETED: return null;
                    default: break;
                }
            }
            Version v = s.rows.get(key);
            return v == null ? null : v.at(snapshot);
        }

        @Override
        public ByteBuffer get(KvSpace space, ByteBuffer key) {
            byte[] v = lookup((Space) space, bytes(key));
            return v == null ? null : ByteBuffer.wrap(v).asReadOnlyBuffer();
        }

        /** Walks the committed versions lazily, merged with this transaction's writes. */
        @Override
        public KvCursor range(KvSpace space, byte[] begin, byte[] end, boolean reverse, int limitHint) {
            Space s = (Space) space;
            NavigableMap<byte[], Version> committedRows = sub(s.rows, begin, end);
            Iterator<Map.Entry<byte[], Version>> base = (reverse ? committedRows.descendingMap() : committedRows).entrySet().iterator();
            KvCursor committed = new KvCursor() {
                private byte[] key;
                private byte[] value;

                @Override
                public boolean next() {
                    while (base.hasNext()) {
                        Map.Entry<byte[], Version> e = base.next();
                        key = e.getKey();
                        value = e.getValue().at(snapshot);
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
            return readOnly ? committed : writes.merge(space, committed, begin, end, reverse);
        }

        @Override
        public long count(KvSpace space) {
            long n = 0;
            try (KvCursor r = range(space, null, null, false, 0)) {
                while (r.next()) n++;
            }
            return n;
        }

        private void writable() {
            if (readOnly) throw new IllegalStateException("a write in a read-only transaction");
        }

        @Override
        public ByteBuffer reserve(KvSpace space, ByteBuffer key, int size) {
            writable();
            return writes.reserve(space, bytes(key), size);
        }

        @Override
        public boolean delete(KvSpace space, ByteBuffer key) {
            writable();
            byte[] k = bytes(key);
            boolean there = lookup((Space) space, k) != null;
            if (there) writes.delete(space, k);
            return there;
        }

        @Override
        public KvTxn nested() {
            if (readOnly) throw new IllegalStateException("a nested transaction in a read-only one");
            return new Txn(writes.nested(), false, snapshot, false);
        }

        @Override
        public void commit() {
            if (readOnly) return;
            if (!top) {
                writes.commitToParent();
                return;
            }
            long commit = committed + 1;
            writes.toApply().forEach((s, w) -> w.forEach(e ->
                ((Space) s).rows.compute(e.getKey(), (key, older) -> new Version(commit, e.getValue(), older))));
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

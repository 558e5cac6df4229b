package kiln.db;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Keeps one {@link Index}'s entries as its table's rows change, and adds them for the rows the table
 * had before the index was declared: one maintainer per kind of index, as the FoundationDB Record
 * Layer's {@code IndexMaintainer}. The index keeps its storage layout and its reads; its
 * {@link Table} calls the maintainer inside the write transaction that changes a row
 * ({@link Table#put}: {@link #check} for every index, then {@link #update} for every index;
 * {@link Table#delete}: {@link #update} to nothing), and the {@link OnlineIndexer} calls
 * {@link #build}.
 *
 * <p>Kinds: {@link Value} (an entry per index key a row gives: {@link Db#index}, {@link Db#indexMany})
 * and {@link Unique} (the same entries, and no index key for two rows: {@link Db#uniqueIndex}).
 *
 * @param <I> the index key type
 * @param <K> the table's key type
 * @param <V> the table's value type
 */
abstract sealed class IndexMaintainer<I, K, V> implements Table.Upkeep<K, V> permits IndexMaintainer.Value, IndexMaintainer.Unique {
    final Index<I, K, V> index;

    private IndexMaintainer(Index<I, K, V> index) {
        this.index = index;
    }

    /** @return the maintainer of {@code index}'s kind */
    static <I, K, V> IndexMaintainer<I, K, V> of(Index<I, K, V> index) {
        return index.isUnique() ? new Unique<>(index) : new Value<>(index);
    }

    /**
     * Before any index of the table changes: refuses a put of {@code value} under {@code key}
     * (its bytes {@code row}) that this kind of index cannot take.
     *
     * @throws DbException.UniqueViolation from a unique index whose key another row has
     */
    @Override
    public abstract void check(Txn txn, byte[] row, K key, V value);

    /**
     * Keeps the entries for row {@code row} (key {@code key}) changed from {@code old} to
     * {@code value}: either null for none, so an insert, an update or a delete. Deletes the old
     * value's entries the new one does not give, then adds the new one's.
     */
    @Override
    public final void update(Txn txn, byte[] row, K key, V old, V value) {
        List<byte[]> now = value == null ? List.of() : index.keysOf(key, value);
        if (old != null) {
            for (byte[] i : index.keysOf(key, old)) {
                if (!contains(now, i)) txn.kv.delete(index.space, index.entry(i, row));
            }
        }
        for (byte[] i : now) txn.kv.reserve(index.space, index.entry(i, row), 0);
    }

    /**
     * One step of an online build, in a write query: adds the entries of up to {@code max} rows
     * after {@code after} (from the first row when null).
     *
     * @return the last row key done, or null when the table has no row after it
     * @throws DbException.UniqueViolation from a unique index over rows that share an index key
     */
    final byte[] build(Txn txn, byte[] after, int max) {
        Table<K, V> table = index.table();
        List<byte[]> rows = new ArrayList<>();
        List<V> values = new ArrayList<>();
        try (KvCursor r = txn.kv.range(table.space, after == null ? null : Keys.next(after), null, false, max)) {
            while (rows.size() < max && r.next()) {
                rows.add(Keys.toArray(r.key()));
                values.add(table.decodeValue(r.value()));
            }
        }
        byte[] last = null;
        for (int j = 0; j < rows.size(); j++) {
            byte[] row = rows.get(j);
            K key = table.decodeKey(row);
            for (byte[] i : index.keysOf(key, values.get(j))) {
                adding(txn, i, row, key);
                txn.kv.reserve(index.space, index.entry(i, row), 0);
            }
            last = row;
        }
        return rows.size() < max ? null : last;
    }

    /** In a {@link #build}: the entry of index key {@code i} for row {@code row} is about to be added. */
    abstract void adding(Txn txn, byte[] i, byte[] row, K key);

    private static boolean contains(List<byte[]> keys, byte[] key) {
        for (byte[] k : keys) {
            if (Arrays.equals(k, key)) return true;
        }
        return false;
    }

    /** An index whose rows may share index keys: nothing to refuse. */
    static final class Value<I, K, V> extends IndexMaintainer<I, K, V> {
        Value(Index<I, K, V> index) {
            super(index);
        }

        @Override
        public void check(Txn txn, byte[] row, K key, V value) {
        }

        @Override
        void adding(Txn txn, byte[] i, byte[] row, K key) {
        }
    }

    /** An index that refuses a second row for an index key, at a put and in a build. */
    static final class Unique<I, K, V> extends IndexMaintainer<I, K, V> {
        Unique(Index<I, K, V> index) {
            super(index);
        }

        @Override
        public void check(Txn txn, byte[] row, K key, V value) {
            for (byte[] i : index.keysOf(key, value)) refuseTaken(txn, i, row, key);
        }

        @Override
        void adding(Txn txn, byte[] i, byte[] row, K key) {
            refuseTaken(txn, i, row, key);
        }

        /** @throws DbException.UniqueViolation naming the index key and the row that has it, when a row other than {@code row} has {@code i} */
        private void refuseTaken(Txn txn, byte[] i, byte[] row, K key) {
            Table<K, V> table = index.table();
            byte[] p = Index.packed(i);
            try (KvCursor r = txn.kv.range(index.space, Keys.next(p, (byte) 1), Keys.next(p, (byte) 2), false, 2)) {
                while (r.next()) {
                    byte[] other = Index.rowKey(r.key());
                    // an expired row's entry does not hold its key: the sweeper deletes it with the row
                    if (table.isExpiring() && table.get(txn, table.decodeKey(other)) == null) continue;
                    if (!Arrays.equals(other, row)) {
                        Object taken = index.decodeKey(ByteBuffer.wrap(i).order(ByteOrder.BIG_ENDIAN));
                        throw new DbException.UniqueViolation(index.name(), taken, "'" + taken + "' is taken in unique index '" + index.name()
                            + "' of '" + table.name() + "' (by row " + table.decodeKey(other) + "; the write for row " + key + " was refused)");
                    }
                }
            }
        }
    }
}

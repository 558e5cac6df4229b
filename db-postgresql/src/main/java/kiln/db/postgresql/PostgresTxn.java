package kiln.db.postgresql;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import kiln.db.DbException;
import kiln.db.KvCursor;
import kiln.db.KvSpace;
import kiln.db.KvTxn;
import kiln.db.KvWriteBuffer;

/**
 * A transaction of {@link PostgresEngine}: a read-only snapshot on a pooled read connection, or the
 * writer's serializable transaction (and its nested children) whose writes wait in a
 * {@link KvWriteBuffer} until the top commit sends them.
 */
final class PostgresTxn implements KvTxn {
    /** The most rows one range query fetches; a range's first fetch is its limit hint, then doubling up to this. */
    private static final int MAX_FETCH = 4096;
    private static final int FIRST_FETCH = 64;

    /** The notification channel of commits: each commit notifies it with the names of the spaces it wrote. */
    static final String CHANNEL = "kiln_commits";

    /** What an SQL failure means to the database ({@link PostgresEngine#failure}, which counts the server unreachable). */
    interface Failures {
        /**
         * @param commit true when {@code e} came from {@code COMMIT}: a lost connection then leaves the outcome unknown
         * @return a {@link KvTxn.Conflict}, {@link DbException.Unavailable}, or another {@link DbException}
         */
        RuntimeException of(SQLException e, String what, boolean commit);
    }

    private final Failures failures;
    private final Connection connection;
    private final boolean readOnly;
    /** The writes; null in a read transaction. */
    private final KvWriteBuffer buffer;
    /** The top transaction: it owns the connection, commits, and remembers a conflict. */
    private final PostgresTxn top;
    private boolean committed;
    private RuntimeException doomed;

    PostgresTxn(Failures failures, Connection connection, boolean readOnly) {
        this.failures = failures;
        this.connection = connection;
        this.readOnly = readOnly;
        this.buffer = readOnly ? null : new KvWriteBuffer();
        this.top = this;
    }

    private PostgresTxn(PostgresTxn parent) {
        this.failures = parent.failures;
        this.connection = parent.connection;
        this.readOnly = false;
        this.buffer = parent.buffer.nested();
        this.top = parent.top;
    }

    Connection connection() {
        check();
        return connection;
    }

    /** @throws RuntimeException the conflict or failure that doomed the transaction */
    private void check() {
        if (top.doomed != null) throw top.doomed;
    }

    /** Records that the transaction cannot commit: every later call throws {@code c}. */
    KvTxn.Conflict conflict(KvTxn.Conflict c) {
        top.doomed = c;
        return c;
    }

    /**
     * @return {@code e} as the database sees it ({@link PostgresEngine#failure}); a conflict or a lost
     *         connection dooms the transaction (PostgreSQL refuses every later statement in it anyway)
     */
    RuntimeException failed(SQLException e, String what) {
        RuntimeException r = failures.of(e, what, false);
        if (r instanceof KvTxn.Conflict || r instanceof DbException.Unavailable) top.doomed = r;
        return r;
    }

    @Override
    public boolean isReadOnly() {
        return readOnly;
    }

    @Override
    public ByteBuffer get(KvSpace space, ByteBuffer key) {
        byte[] k = bytes(key);
        if (buffer != null) {
            switch (buffer.known(space, k)) {
                case WRITTEN: return ByteBuffer.wrap(buffer.get(space, k)).asReadOnlyBuffer();
                case DELETED: return null;
                default: break;
            }
        }
        byte[] v = select(space, k);
        return v == null ? null : ByteBuffer.wrap(v).asReadOnlyBuffer();
    }

    private byte[] select(KvSpace space, byte[] key) {
        Space s = (Space) space;
        try (PreparedStatement st = connection().prepareStatement(s.get)) {
            st.setBytes(1, key);
            try (ResultSet r = st.executeQuery()) {
                return r.next() ? r.getBytes(1) : null;
            }
        } catch (SQLException e) {
            throw failed(e, "reading " + s.name);
        }
    }

    @Override
    public KvCursor range(KvSpace space, byte[] begin, byte[] end, boolean reverse, int limitHint) {
        check();
        KvCursor committed = new Rows((Space) space, begin, end, reverse, limitHint > 0 ? Math.min(limitHint, MAX_FETCH) : FIRST_FETCH);
        return buffer == null ? committed : buffer.merge(space, committed, begin, end, reverse);
    }

    @Override
    public long count(KvSpace space) {
        Space s = (Space) space;
        if (buffer == null || !buffer.touches(space)) {
            try (PreparedStatement st = connection().prepareStatement(s.count); ResultSet r = st.executeQuery()) {
                r.next();
                return r.getLong(1);
            } catch (SQLException e) {
                throw failed(e, "counting " + s.name);
            }
        }
        long n = 0;  // with writes of its own: walk what this transaction sees
        try (KvCursor r = range(space, null, null, false, MAX_FETCH)) {
            while (r.next()) n++;
        }
        return n;
    }

    private void writable() {
        if (readOnly) throw new IllegalStateException("a write in a read-only transaction");
        check();
    }

    @Override
    public ByteBuffer reserve(KvSpace space, ByteBuffer key, int size) {
        writable();
        return buffer.reserve(space, bytes(key), size);
    }

    @Override
    public boolean delete(KvSpace space, ByteBuffer key) {
        writable();
        byte[] k = bytes(key);
        boolean there = switch (buffer.known(space, k)) {
            case WRITTEN -> true;
            case DELETED -> false;
            default -> select(space, k) != null;
        };
        if (there) buffer.delete(space, k);
        return there;
    }

    @Override
    public KvTxn nested() {
        if (readOnly) throw new IllegalStateException("a nested transaction in a read-only one");
        check();
        return new PostgresTxn(this);
    }

    /**
     * A child gives its writes to its parent. The top sends every write (one batch of upserts and one
     * of deletes per space), a notification per space written, then {@code COMMIT}.
     */
    @Override
    public void commit() {
        check();
        if (readOnly) {
            committed = true;
            return;
        }
        if (top != this) {
            buffer.commitToParent();
            return;
        }
        Map<KvSpace, List<Map.Entry<byte[], byte[]>>> all = buffer.toApply();
        try {
            for (Map.Entry<KvSpace, List<Map.Entry<byte[], byte[]>>> e : all.entrySet()) apply((Space) e.getKey(), e.getValue());
            if (!all.isEmpty()) {
                try (PreparedStatement n = connection.prepareStatement("SELECT pg_notify('" + CHANNEL + "', ?)")) {
                    for (KvSpace s : all.keySet()) {
                        n.setString(1, s.name());
                        n.addBatch();
                    }
                    n.executeBatch();
                }
            }
        } catch (SQLException e) {
            throw failed(e, "writing " + all.size() + " spaces");
        }
        try {
            connection.commit();
            committed = true;
        } catch (SQLException e) {
            RuntimeException r = failures.of(e, "committing", true);
            top.doomed = r;
            throw r;
        }
    }

    private void apply(Space s, List<Map.Entry<byte[], byte[]>> writes) throws SQLException {
        List<byte[]> deletes = new ArrayList<>();
        try (PreparedStatement up = connection.prepareStatement(s.upsert)) {
            int n = 0;
            for (Map.Entry<byte[], byte[]> w : writes) {
                if (w.getValue() == null) {
                    deletes.add(w.getKey());
                    continue;
                }
                up.setBytes(1, w.getKey());
                up.setBytes(2, w.getValue());
                up.addBatch();
                n++;
            }
            if (n > 0) up.executeBatch();
        }
        if (deletes.isEmpty()) return;
        try (PreparedStatement del = connection.prepareStatement(s.delete)) {
            for (byte[] k : deletes) {
                del.setBytes(1, k);
                del.addBatch();
            }
            del.executeBatch();
        }
    }

    /**
     * Lets the next server's writer go, after the write transaction's commit or rollback: the writers
     * take turns by a session advisory lock ({@link PostgresEngine#beginWrite}).
     */
    static void releaseWriteLock(Connection c) throws SQLException {
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
            s.execute("SELECT pg_advisory_unlock_all()");  // all: a lock taken twice on this session is let go too
        }
        c.setAutoCommit(false);
    }

    /** A child forgets its writes; the top rolls back (unless committed) and gives its connection back. */
    @Override
    public void close() {
        if (top != this) return;
        try {
            if (!committed) connection.rollback();
            if (!readOnly) releaseWriteLock(connection);
        } catch (SQLException e) {
            // the connection is broken: the pool drops it, and PostgreSQL rolled back with it and let go of its lock
        } finally {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // returned to the pool or dropped by it either way
            }
        }
    }

    /**
     * A range's committed entries, fetched in batches of rows ordered by key: each next batch goes on
     * after the last key met, in the same snapshot (the transaction's), so batches never overlap or
     * miss a row.
     */
    private final class Rows implements KvCursor {
        private final Space space;
        private final byte[] begin;
        private final byte[] end;
        private final boolean reverse;
        private int fetch;
        private final List<byte[]> keys = new ArrayList<>();
        private final List<byte[]> values = new ArrayList<>();
        private int at = -1;
        private boolean last;
        private byte[] after;

        Rows(Space space, byte[] begin, byte[] end, boolean reverse, int fetch) {
            this.space = space;
            this.begin = begin;
            this.end = end;
            this.reverse = reverse;
            this.fetch = fetch;
        }

        @Override
        public boolean next() {
            if (at + 1 < keys.size()) {
                at++;
                return true;
            }
            if (last) return false;
            fetchMore();
            at = 0;
            return !keys.isEmpty();
        }

        private void fetchMore() {
            StringBuilder sql = new StringBuilder("SELECT k, v FROM ").append(space.table).append(" WHERE true");
            List<byte[]> args = new ArrayList<>(3);
            if (begin != null) {
                sql.append(" AND k >= ?");
                args.add(begin);
            }
            if (end != null) {
                sql.append(" AND k < ?");
                args.add(end);
            }
            if (after != null) {
                sql.append(reverse ? " AND k < ?" : " AND k > ?");
                args.add(after);
            }
            sql.append(" ORDER BY k").append(reverse ? " DESC" : "").append(" LIMIT ").append(fetch);
            keys.clear();
            values.clear();
            try (PreparedStatement st = connection().prepareStatement(sql.toString())) {
                for (int i = 0; i < args.size(); i++) st.setBytes(i + 1, args.get(i));
                try (ResultSet r = st.executeQuery()) {
                    while (r.next()) {
                        keys.add(r.getBytes(1));
                        values.add(r.getBytes(2));
                    }
                }
            } catch (SQLException e) {
                throw failed(e, "reading a range of " + space.name);
            }
            last = keys.size() < fetch;
            if (!keys.isEmpty()) after = keys.get(keys.size() - 1);
            fetch = Math.min(MAX_FETCH, fetch * 2);
        }

        @Override
        public ByteBuffer key() {
            return ByteBuffer.wrap(keys.get(at)).asReadOnlyBuffer();
        }

        @Override
        public ByteBuffer value() {
            return ByteBuffer.wrap(values.get(at)).asReadOnlyBuffer();
        }

        @Override
        public void close() {
        }
    }

    static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.get(b.position(), out);
        return out;
    }
}

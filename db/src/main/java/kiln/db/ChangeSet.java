package kiln.db;

import java.util.List;

/**
 * The changes one committed write query made to one table, as its {@link ChangeFeed} delivers them:
 * numbered by the feed's commit sequence number, in the order the query made them.
 *
 * <pre>{@code
 * for (ChangeSet<Integer, Integer> set : feed.read(seen, 100)) {
 *     for (ChangeSet.Change<Integer, Integer> c : set.changes()) {
 *         if (c.deleted()) forget(c.key()); else show(c.key(), c.value());   // c.expired(): the sweeper's delete
 *     }
 *     seen = set.seq();                                                    // the event id to resume after
 * }
 * }</pre>
 *
 * @param seq         the commit sequence number: 1 for the table's first recorded write, then one
 *                    more per write query that changed the table (durable: it goes on after a restart)
 * @param committedAt when the commit became durable, microseconds since the epoch; for a change set
 *                    read back from the durable log (after a restart, or older than the feed keeps in
 *                    memory), when its commit began
 * @param changes     one per put or delete, in order; never empty
 * @param <K>         the table's key type
 * @param <V>         the table's value type
 */
public record ChangeSet<K, V>(long seq, long committedAt, List<Change<K, V>> changes) {
    /**
     * One put or delete.
     *
     * @param key     the key written
     * @param value   the value put, or null when the key was deleted
     * @param expired true for a delete of a row whose expiry passed, made by the database's sweeper
     *                ({@link Db#expiringTable})
     */
    public record Change<K, V>(K key, V value, boolean expired) {
        /** A put, or a delete by a write query. */
        public Change(K key, V value) {
            this(key, value, false);
        }

        /** @return true when the key was deleted */
        public boolean deleted() {
            return value == null;
        }
    }

    /** @return true when one of the changes is to {@code key} */
    public boolean touches(K key) {
        for (Change<K, V> c : changes) {
            if (c.key.equals(key)) return true;
        }
        return false;
    }
}

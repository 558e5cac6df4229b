package kiln.db;

import java.util.ArrayList;

/**
 * One transaction as a query sees it. Hand it to {@link Table} methods; it is only valid inside the
 * {@link Query#run} call that received it.
 *
 * <p>Read transactions see a consistent snapshot taken when the query started. The write
 * transaction sees every write committed before it plus its own.
 *
 * <pre>{@code
 * long next = await(db.write(txn -> {          // txn: this write query's transaction
 *     long n = hits.get(txn, page, 0L) + 1;    // sees what committed before, and this query's own puts
 *     hits.put(txn, page, n);
 *     return n;                                // commits with its batch; txn is invalid after return
 * }));
 * }</pre>
 *
 * <p>A write method ({@code put}, {@code delete}, {@code next}) called with a read query's
 * transaction throws {@link IllegalStateException}.
 */
public final class Txn {
    /** The engine's transaction under this one. */
    final KvTxn kv;
    /** A write query's puts and deletes on tables with a {@link ChangeFeed}: feed, {@link Recorded}, ...; null while none. */
    private ArrayList<Object> changes;

    /** The wall-clock time the query sees expiries at, microseconds since the epoch; 0 until first asked. */
    private long now;

    Txn(KvTxn kv) {
        this.kv = kv;
    }

    /**
     * @return the time this query reads expiries at, microseconds since the epoch: the clock at its
     *         first call, the same for the rest of the query, so every read of it agrees
     */
    long nowMicros() {
        if (now == 0) now = Clock.micros();
        return now;
    }

    /** @return true for a {@link Db#read} transaction, false inside {@link Db#write} */
    public boolean isReadOnly() {
        return kv.isReadOnly();
    }

    /**
     * Records a put or a delete on a table with a change feed.
     *
     * @param feed the feed that logs it: the writer groups a query's changes by it (by identity)
     */
    <K, V> void changed(Object feed, Recorded<K, V> change) {
        if (changes == null) changes = new ArrayList<>();
        changes.add(feed);
        changes.add(change);
    }

    /** @return what {@link #changed} recorded, as feed, {@link Recorded} pairs; null when nothing was */
    ArrayList<Object> changes() {
        return changes;
    }

    void checkWritable(String op) {
        if (kv.isReadOnly()) {
            throw new IllegalStateException(op + " needs a write transaction: run it inside db.write(txn -> ...), not db.read");
        }
    }
}

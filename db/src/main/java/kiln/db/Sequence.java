package kiln.db;

/**
 * A durable counter, for ids: 1, 2, 3... Obtain one with {@link Db#sequence}; allocate inside a write
 * query, so that the id and the row that uses it commit together:
 *
 * <pre>{@code
 * Sequence ids = db.sequence("todos");
 * long id = db.write(txn -> {
 *     long next = ids.next(txn);
 *     todos.put(txn, next, todo);
 *     return next;
 * }).join();                        // in fiber code: Fibers.await(db.write(...))
 * }</pre>
 *
 * A write query that is run again (a batch too large for one transaction) or rolled back takes the same id again: the counter
 * lives in the transaction like any row. Ids of deleted rows are not reused. The counters are kept
 * in the table {@value #TABLE}.
 */
public final class Sequence {
    /** The table that holds every sequence's last value, name → last id. */
    public static final String TABLE = "kiln.sequences";

    private final Table<String, Long> counters;
    private final String name;

    Sequence(Table<String, Long> counters, String name) {
        this.counters = counters;
        this.name = name;
    }

    /**
     * Allocates the next id, in a write query: {@code long id = ids.next(txn);}. The id commits with
     * the query; a query that is rolled back, or run again, leaves it for the next.
     *
     * @param txn a write query's transaction
     * @return the next value: 1 for a new sequence, then one more than the last value allocated
     * @throws IllegalStateException in a read transaction
     */
    public long next(Txn txn) {
        long next = current(txn) + 1;
        counters.put(txn, name, next);
        return next;
    }

    /** @return the last value allocated (committed, or earlier in this transaction), 0 when none */
    public long current(Txn txn) {
        return counters.get(txn, name, 0L);
    }

    /** @return the sequence's name */
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        return "Sequence(" + name + ")";
    }
}

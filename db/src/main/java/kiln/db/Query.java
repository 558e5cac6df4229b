package kiln.db;

/**
 * A query: plain Java code that runs against one transaction and returns a result.
 *
 * <pre>{@code
 * Query<Integer> q = txn -> worlds.get(txn, 42);
 * }</pre>
 *
 * <p>A query must not block and must not pause (it is not a Kilim {@code Pausable} method): it runs
 * to completion while its transaction is open. Read queries run on the calling thread (LMDB) or
 * on the engine's read threads (PostgreSQL); write queries run on the database's writer thread
 * (see {@link Db#write}).
 *
 * <p><b>Write queries may be run more than once.</b> When a batch outgrows one transaction or what
 * is left of the map, the database rolls the whole batch back and runs its writes again one at a
 * time; over PostgreSQL, when PostgreSQL cannot serialize the batch with another client's write
 * (SQLSTATE 40001), the whole batch runs again on a fresh snapshot, as FoundationDB re-runs a
 * transaction. A write query must therefore touch nothing but its transaction: compute random numbers,
 * timestamps and other inputs <em>before</em> building the lambda, and do side effects after its
 * future completes.
 *
 * @param <R> the result type; {@code null} is allowed
 */
@FunctionalInterface
public interface Query<R> {
    /**
     * Runs the query in {@code txn}: the database calls it once for a read, once or more for a write
     * (see above), never concurrently with itself on one transaction.
     *
     * @param txn the open transaction; valid only until this method returns, so copy what you
     *            need out of it (the codecs already do)
     * @return the result, handed to whoever awaits the query
     * @throws Exception any exception; a read query's future fails with it, a write query is
     *                   rolled back (alone, its batch-mates still commit) and its future fails with it
     */
    R run(Txn txn) throws Exception;
}

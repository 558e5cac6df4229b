package kiln.db;

import java.nio.ByteBuffer;

/**
 * A transaction of a {@link KvEngine}: a read-only snapshot, or the write transaction and its
 * nested children. Keys are compared as unsigned bytes, the shorter first on a tie (LMDB's and
 * PostgreSQL's {@code bytea} order). Every {@code ByteBuffer} handed in is read between its
 * position and limit and not kept; every one handed out is valid until the transaction's next
 * write or its end.
 */
public interface KvTxn extends AutoCloseable {
    /** @return true for a read-only transaction */
    boolean isReadOnly();

    /** @return the value under {@code key}, or null when there is none */
    ByteBuffer get(KvSpace space, ByteBuffer key);

    /**
     * The entries with keys in {@code [begin, end)} (FoundationDB's {@code getRange}), in key order
     * or reversed.
     *
     * @param begin the first key of the range, inclusive; null for the space's first
     * @param end   the key after the range, exclusive; null for past the space's last
     * @param limitHint how many entries the caller expects to read at most (an engine that fetches in
     *                  batches fetches that many first); 0 when unknown
     */
    KvCursor range(KvSpace space, byte[] begin, byte[] end, boolean reverse, int limitHint);

    /** @return the number of entries in {@code space} */
    long count(KvSpace space);

    /**
     * Makes room for a value of {@code size} bytes under {@code key}, replacing any value there.
     *
     * @return a buffer positioned at the room, exactly {@code size} bytes to its limit: the caller
     *         writes the value into it before its next call on this transaction
     * @throws TooLarge when the write does not fit
     * @throws IllegalStateException in a read-only transaction
     */
    ByteBuffer reserve(KvSpace space, ByteBuffer key, int size);

    /** @return true when {@code key} was there and is deleted */
    boolean delete(KvSpace space, ByteBuffer key);

    /**
     * Begins a child of this write transaction: its writes are seen by it alone until its
     * {@link #commit} gives them to the parent, and {@link #close} without a commit throws them away.
     */
    KvTxn nested();

    /**
     * Commits: a child's writes go to its parent; the top-level transaction's become durable and
     * seen by every read transaction begun after this returns.
     *
     * @throws TooLarge when the writes do not fit
     */
    void commit();

    /** Ends the transaction; aborts it when it was not committed. */
    @Override
    void close();

    /**
     * The write does not fit: in one transaction ({@code full == false}: the writer retries its
     * writes one at a time), or in what is left of the engine's room ({@code full == true}).
     */
    final class TooLarge extends RuntimeException {
        private static final long serialVersionUID = 1L;
        /** True when the engine is full, false when one transaction is. */
        public final boolean full;

        public TooLarge(boolean full, Throwable cause) {
            this(full, full ? "the database is full" : "the transaction is too large", cause);
        }

        /**
         * @param message what a user reads: what did not fit, and the engine's setting that bounds it
         */
        public TooLarge(boolean full, String message, Throwable cause) {
            super(message, cause);
            this.full = full;
        }
    }

    /**
     * The transaction cannot be serialized with another process's that committed first (PostgreSQL's
     * SQLSTATE 40001 serialization_failure or 40P01 deadlock_detected; FoundationDB's
     * {@code not_committed}): it is rolled back whole, and the writer runs its write queries again on a
     * fresh snapshot (they are re-runnable: see {@link Query}). An engine with one writer never
     * throws it. Once thrown, every later call of the transaction throws it too, so a write query that
     * catches it cannot commit half a transaction.
     */
    final class Conflict extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public Conflict(String message, Throwable cause) {
            super(message, cause);
        }
    }
}

package kiln.db;

/**
 * Base class of every error the database reports about itself (as opposed to exceptions thrown by
 * a user's query, which are passed through unchanged). Unchecked, like lmdbjava's own exceptions.
 * Each kind is a nested class, so a caller catches what it can handle:
 *
 * <pre>{@code
 * try {
 *     await(db.write(txn -> { users.put(txn, id, user); return null; }));
 * } catch (DbException.UniqueViolation e) {
 *     throw new HttpException(409, "that e-mail address is registered");
 * }
 * }</pre>
 *
 * <p>Uncaught in a handler, kiln's pipeline ({@code kiln.server.Failures}) answers with the kind's
 * status and its {@link #clientMessage}, and logs {@link #getMessage()}: 400 for
 * {@link BadContinuation} and {@link BadIdempotencyKey}; 409 {@link UniqueViolation}; 413
 * {@link ValueTooLarge}; 422 {@link IdempotencyKeyReused}; 503 with {@code Retry-After: 1} for
 * {@link Overloaded}, {@link ReadersFull}, {@link IndexNotReady}, {@link Unavailable} (and
 * {@link DeadlineExceeded}) and {@link Fatal}; 507 {@link DatabaseFull}; any other, 500.
 */
public class DbException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message what went wrong, with the names of what it concerns (for the log) */
    public DbException(String message) {
        super(message);
    }

    /**
     * @param message what went wrong, with the names of what it concerns (for the log)
     * @param cause   the engine's or the driver's exception
     */
    public DbException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * What a client is told of this error, where {@link #getMessage()} is for the log: a
     * {@link UniqueViolation}'s is {@code 'ada@example.org' is already taken}, its message names the
     * index, the table and both rows. Each kind says it its own way; this class says
     * {@code the database could not complete the request}.
     *
     * @return what a client may be told: what went wrong in its terms, never a table, index, row,
     *         host or path ({@link #getMessage()} has those, for the log). An HTTP layer answers
     *         with it ({@code kiln.server.Failures}).
     */
    public String clientMessage() {
        return "the database could not complete the request";
    }

    /** The database was closed: no new reads or writes are accepted. */
    public static final class Closed extends DbException {
        private static final long serialVersionUID = 1L;
        public Closed(String message) { super(message); }
    }

    /**
     * The write queue is full: the writer thread cannot keep up. Back off and retry; an HTTP layer
     * answers 503 Service Unavailable with Retry-After.
     */
    public static final class Overloaded extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return "the database is overloaded; retry shortly"; }
        public Overloaded(String message) { super(message); }
    }

    /**
     * LMDB's reader table is full (MDB_READERS_FULL): more threads are reading at once than the
     * environment was opened for. Raise LMDB's maxReaders (lmdb:DIR?maxReaders=N, --db-max-readers).
     */
    public static final class ReadersFull extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return "the database is busy; retry shortly"; }
        public ReadersFull(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * The files in the data directory are not an LMDB environment this build can open: corrupt,
     * truncated, written by an incompatible LMDB version, or not LMDB at all.
     */
    public static final class Corrupt extends DbException {
        private static final long serialVersionUID = 1L;
        public Corrupt(String message, Throwable cause) { super(message, cause); }
    }

    /** The data directory cannot be created, read or written. */
    public static final class DataDirectory extends DbException {
        private static final long serialVersionUID = 1L;
        public DataDirectory(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * The database is open by another process that writes it (a kiln server, or {@code kiln db
     * load}): an engine whose data has one writer process at a time (LMDB) refuses a second. The
     * message names the directory and the process holding it.
     */
    public static final class InUse extends DbException {
        private static final long serialVersionUID = 1L;
        public InUse(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * A commit failed (for example the disk is full: ENOSPC, EDQUOT or EFBIG). Every write in the
     * batch was rolled back; the database stays consistent and later writes are tried again. Retrying
     * is safe even when the failure came from {@code fdatasync} (unlike PostgreSQL's retried fsync in
     * 2018's "fsyncgate"): the failed commit's meta page was never written, so none of the pages it
     * wrote is referenced, and the next commit writes every page it needs afresh from its own memory.
     * An I/O error (EIO) is not retried: it is {@link Fatal}.
     */
    public static final class CommitFailed extends DbException {
        private static final long serialVersionUID = 1L;
        public CommitFailed(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * A value larger than a table takes ({@link Table#MAX_VALUE_BYTES}, 16 MiB, on every engine):
     * that write query failed, alone, and nothing of it is stored. An HTTP layer answers 413.
     */
    public static final class ValueTooLarge extends DbException {
        private static final long serialVersionUID = 1L;
        /** The value's size, bytes. */
        public final long bytes;
        /** The most a value may have, bytes. */
        public final long maxBytes;

        public ValueTooLarge(String message, long bytes, long maxBytes) {
            super(message);
            this.bytes = bytes;
            this.maxBytes = maxBytes;
        }

        @Override public String clientMessage() {
            return "the value is " + bytes + " bytes; at most " + maxBytes + " are stored";
        }
    }

    /**
     * The database may hold no more: a write did not fit in the map's ceiling
     * (LMDB's maxMapSize). That write failed alone; reads, and writes that fit in the
     * pages freed by deletes, go on.
     */
    public static final class DatabaseFull extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return "the database is full"; }
        public DatabaseFull(String message) { super(message); }
    }

    /**
     * The environment failed in a way after which this process must not use it again: LMDB panicked
     * (MDB_PANIC, after a failed meta-page write), a page is corrupted (MDB_CORRUPTED,
     * MDB_PAGE_NOTFOUND), or writing or syncing the data file failed with an I/O error (EIO). Every
     * waiting and later read and write fails with this one exception, {@link Db#health} reports
     * it, and {@link Db.Builder#onFatal} is told once, so that the process can exit and its
     * supervisor restart it: LMDB reopens from the last commit that reached the disk, which
     * holds every acknowledged write.
     */
    public static final class Fatal extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return "the database failed; this server is restarting"; }
        public Fatal(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * A {@link Range#after continuation} this database did not make for that listing: not a token,
     * altered or forged (its signature fails), from another database, or for another table, index,
     * prefix or direction (its bounds may differ: see {@link Range#after}).
     * An HTTP layer answers 400 with the message.
     */
    public static final class BadContinuation extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return getMessage(); }
        public BadContinuation(String message) { super(message); }
    }

    /** A backup could not be made: the target is unusable, the copy failed, or it did not read back. */
    public static final class BackupFailed extends DbException {
        private static final long serialVersionUID = 1L;
        public BackupFailed(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * A {@link ChangeFeed} reader asked for changes after a sequence number the feed no longer keeps
     * (it lagged by more than the feed's window) or never had (from before a restore): reload the
     * state, then follow the feed from its {@link ChangeFeed#lastSeq()}.
     */
    public static final class Expired extends DbException {
        private static final long serialVersionUID = 1L;
        public Expired(String message) { super(message); }
    }

    /** More {@link ChangeFeed#watch watches} are pending than {@link Db.Builder#maxWatches} allows. */
    public static final class TooManyWatches extends DbException {
        private static final long serialVersionUID = 1L;
        public TooManyWatches(String message) { super(message); }
    }

    /**
     * A write would give a {@link Index unique index} a key that another row already has: the write
     * query fails (its transaction rolls back alone) and an HTTP layer answers 409 Conflict with
     * {@link #clientMessage} ({@code 'ada@example.org' is already taken}); the message, for the log,
     * names the index, its table and both rows. For a message of the app's own ("that e-mail
     * address is registered"), catch it in the handler and throw an {@code HttpException(409, ...)}.
     */
    public static final class UniqueViolation extends DbException {
        private static final long serialVersionUID = 1L;
        /** The unique index's name. */
        public final String index;
        /** The index key that is taken: what the write gave (an e-mail address, say). */
        public final transient Object value;

        public UniqueViolation(String index, Object value, String message) {
            super(message);
            this.index = index;
            this.value = value;
        }

        @Override public String clientMessage() {
            return "'" + value + "' is already taken";
        }
    }

    /**
     * An {@link IdempotencyKeys idempotency key} came back with another request: its fingerprint
     * differs from the one stored with the key's result. The write query fails (nothing runs, nothing
     * is stored) and an HTTP layer answers 422 Unprocessable Content, as the IETF's
     * draft-ietf-httpapi-idempotency-key-header says for a key reused with another payload ("Error
     * Scenarios"; Stripe refuses it too): a retry must repeat its request exactly, and a new request
     * needs a new key.
     */
    public static final class IdempotencyKeyReused extends DbException {
        private static final long serialVersionUID = 1L;
        /** The key, as the client gave it. */
        public final String key;

        public IdempotencyKeyReused(String key, String message) {
            super(message);
            this.key = key;
        }

        @Override public String clientMessage() { return getMessage(); }
    }

    /**
     * An {@link IdempotencyKeys idempotency key} that is not one: empty, longer than
     * {@value IdempotencyKeys#MAX_KEY_LENGTH} characters (Stripe's limit), or with a character
     * outside printable ASCII (the draft's key is a Structured Field String, RFC 8941 section 3.3.3).
     * The write query fails and an HTTP layer answers 400 with the message.
     */
    public static final class BadIdempotencyKey extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return getMessage(); }
        public BadIdempotencyKey(String message) { super(message); }
    }

    /**
     * An {@link Index} was read before it was built (it is being built over the rows its table had,
     * {@link Index#ready}), or its build failed: an HTTP layer answers 503 with the message.
     */
    public static final class IndexNotReady extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return "an index this request needs is not ready; retry shortly"; }
        public IndexNotReady(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * The database cannot be reached now: a database server over the network (PostgreSQL,
     * {@link KvEngine}) is down, restarting, refusing connections, or the connection broke. The
     * query did not run, or, when the message says so, its commit's outcome is unknown (the
     * connection broke during the commit: it may have been applied; a write made with
     * {@link IdempotencyKeys} is safe to retry with its key). Nothing acknowledged is lost;
     * retry later: an HTTP layer answers 503 with {@code Retry-After: 1}. A query that got no answer
     * within the database's deadline is the subclass {@link DeadlineExceeded}.
     */
    public static class Unavailable extends DbException {
        private static final long serialVersionUID = 1L;
        @Override public String clientMessage() { return "the database is unavailable; retry shortly"; }
        public Unavailable(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * A query the database did not answer within its deadline ({@link Db.Builder#deadline}): the
     * engine is slow or out of reach (a paused PostgreSQL, a commit waiting for a synchronous standby,
     * a partition). What became of it, which the message says too:
     * <ul>
     *   <li>a read: nothing (it is abandoned; {@link #outcomeUnknown} false);</li>
     *   <li>a write still waiting for the writer: withdrawn, it never runs: not applied
     *       ({@link #outcomeUnknown} false);</li>
     *   <li>a write the writer had begun: it may still commit, and then its change feeds publish it:
     *       whether it is applied is unknown ({@link #outcomeUnknown} true; a write made with
     *       {@link IdempotencyKeys} is safe to retry with its key).</li>
     * </ul>
     * An {@link Unavailable}: an HTTP layer answers 503 with {@code Retry-After: 1}.
     */
    public static final class DeadlineExceeded extends Unavailable {
        private static final long serialVersionUID = 1L;
        /** The deadline that passed. */
        public final java.time.Duration deadline;
        /** True for a write the writer had begun, which may still commit; false when nothing of the query is applied. */
        public final boolean outcomeUnknown;

        public DeadlineExceeded(String message, java.time.Duration deadline, boolean outcomeUnknown) {
            super(message, null);
            this.deadline = deadline;
            this.outcomeUnknown = outcomeUnknown;
        }

        @Override public String clientMessage() {
            return "the database did not answer within " + deadline.toMillis() + " ms: "
                + (outcomeUnknown ? "the write had begun and may still be applied (its outcome is unknown)" : "nothing of it was applied; retry shortly");
        }
    }
}

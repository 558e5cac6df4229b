package kiln.db;

import java.nio.file.Path;
import java.util.List;

/**
 * The ordered key-value engine under kiln's tables: named key spaces of byte-string keys kept in
 * unsigned byte order, read in snapshot transactions and written in transactions that commit
 * durably. Everything above it — {@link Table}, {@link Codec}s and {@link Tuple} keys, {@link Range}s
 * and {@link Page}s, {@link ChangeFeed}s, {@link Sequence}s — is a layer over these few calls, as
 * FoundationDB's layers sit over its key-value store (https://apple.github.io/foundationdb/layer-concept.html).
 * kiln-db-lmdb implements it on one box and kiln-db-postgresql over many servers, each in a module
 * of its own; another engine is added by implementing it in one more module, without touching the
 * layers, and registering a {@link KvEngineProvider} so that {@link KvEngines} opens it by URL.
 *
 * <h2>Threading, as {@link Db} uses it</h2>
 * <ul>
 *   <li>{@link #beginRead} is called from any thread, many at once (from {@link #readThreads}
 *       read threads when it has some); a read transaction is used by one thread at a time and
 *       closed by it.</li>
 *   <li>{@link #beginWrite} is called by the database's one writer thread only, and only one write
 *       transaction (with its {@link KvTxn#nested} children) is open at a time. A space is opened in
 *       one ({@link #space}).</li>
 *   <li>{@link #close} is called once, after the writer stopped and with no read transaction open.</li>
 * </ul>
 *
 * <p>Keys are 1..511 bytes ({@link Table#MAX_KEY_BYTES}, the smallest limit of the engines kiln
 * runs on, kept on every engine).
 *
 * <h2>Errors</h2>
 * A write that does not fit ({@link KvTxn.TooLarge}) fails the transaction and the writer retries
 * its writes apart; one that cannot be serialized with another process's ({@link KvTxn.Conflict})
 * is run again whole; an engine that cannot be reached throws {@link DbException.Unavailable}
 * (the queries it met fail with it); {@link #fatalCause} tells which other errors mean the engine
 * must not be used again; every other exception fails only the query that met it.
 */
public interface KvEngine extends AutoCloseable {
    /** The space {@link Db#backup} commits its mark to, before {@link #backup}: {@value}. */
    String BACKUP_MARKS = "kiln.backups";
    /** The key of the mark in {@link #BACKUP_MARKS}: {@value}; its value is a {@link Codec#LONG}. */
    String BACKUP_MARK_KEY = "mark";

    /**
     * @return where the engine's data is, for messages and logs: a directory, or a URL without its
     *         password ({@link KvEngines#redact})
     */
    String location();

    /**
     * Opens a key space, creating it when {@code create} is true and it is missing.
     *
     * @param txn a write transaction of its own (not nested): creating a space commits with it
     * @param name the space's name, 1..511 bytes of UTF-8
     * @return its handle, valid until {@link #close}; null when it is missing and {@code create} is false
     */
    KvSpace space(KvTxn txn, String name, boolean create);

    /** @return the names of every space the engine holds, in byte order; {@code txn} a read transaction */
    List<String> spaceNames(KvTxn txn);

    /**
     * Begins a read-only transaction on the newest committed snapshot: a transaction begun after
     * another (on any thread) sees a snapshot at least as new.
     *
     * @throws DbException.ReadersFull when the engine has no room for another reader
     */
    KvTxn beginRead();

    /** Begins the write transaction; see the class comment for its thread. */
    KvTxn beginWrite();

    /**
     * Reads every entry of {@code space} in {@code txn}'s snapshot and checks the engine's own
     * structure: keys in order, entry count as recorded.
     *
     * @return the number of entries
     * @throws IllegalStateException naming the first inconsistency
     */
    long verify(KvTxn txn, KvSpace space);

    /**
     * Writes a consistent copy of every committed space into {@code target} (a new or empty
     * directory, created if missing), flushes it to disk and reads it back: every entry of every
     * space, and the backup mark ({@link Db#backup} commits {@code mark} into the space
     * {@link #BACKUP_MARKS}, key {@link #BACKUP_MARK_KEY}, before the call), which the copy must hold
     * or a newer one — proof that its snapshot is at least as new as the call. A copy that fails is
     * removed.
     *
     * @return the copy's file
     * @throws DbException.BackupFailed when {@code target} is not a new or empty directory, or naming
     *         what did not check out
     * @throws UnsupportedOperationException when the engine keeps no files to copy
     */
    Path backup(Path target, long mark);

    /**
     * @return why the engine must not be used after {@code e}, or may serve wrong data (a panic, a
     *         corrupted page, an I/O error); null when {@code e} fails only its own query
     */
    String fatalCause(RuntimeException e);

    /** @return the engine's counters now: sizes and read transactions (zeros where it has none) */
    KvStats stats();

    /**
     * How many threads run read queries when a read may block (an engine over the network: JDBC waits
     * on a socket). {@link Db#read} then runs reads on that many threads of its own, every read waiting
     * at once in one read transaction ({@link GroupReader}), and returns the future at once, completed
     * on the read thread; fibers and virtual threads wait on it without holding a thread. An engine
     * that returns N > 0 allows N read transactions at once (a connection each).
     *
     * @return 0 (the default) when reads never block for long and run inline on the caller (a local,
     *         memory-mapped engine)
     */
    default int readThreads() {
        return 0;
    }

    /**
     * Asks to hear of commits made by other processes that share the engine's data (other servers
     * over one PostgreSQL): {@code changed} is called with the name of a space a commit wrote, on a
     * thread of the engine's, at least once after every such commit and possibly more; with null when
     * the engine may have missed some (a notification connection broke and came back), meaning "look
     * at every space", and at least every few seconds with null as a fallback. The database uses it to
     * publish change sets committed elsewhere ({@link ChangeFeed}).
     *
     * <p>The default does nothing: the engine's data has one writer, this process (an embedded engine).
     */
    default void onCommits(java.util.function.Consumer<String> changed) {
    }

    /**
     * Told once by {@link Db}, before it begins a transaction: the database's deadline
     * ({@link Db.Builder#deadline}), after which nobody waits for a query any more; zero when it has
     * none. An engine over the network bounds its own work by it, so that work nobody waits for does
     * not pile up on the server (PostgreSQL: {@code statement_timeout} on the read connections). The
     * default does nothing.
     */
    default void deadline(java.time.Duration deadline) {
    }

    /**
     * Who else has the engine's data open now, as far as the engine can tell: what a tool that must
     * write alone ({@code kiln db load}) checks before it writes. An engine whose {@link KvEngines#open}
     * already keeps every other writer out (LMDB's lock on its directory) returns none.
     *
     * @return one line per other client (PostgreSQL: each other session on the database, with its
     *         application name); empty when there is none (the default)
     */
    default List<String> otherClients() {
        return List.of();
    }

    /** Closes the engine; see the class comment for when it is called. */
    @Override
    void close();
}

package kiln.db.postgresql;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import kiln.db.DbException;
import kiln.db.KvEngine;
import kiln.db.KvEngines;
import kiln.db.KvSpace;
import kiln.db.KvStats;
import kiln.db.KvTxn;

/**
 * kiln's ordered key-value engine on PostgreSQL, so that the same tables, indexes and change feeds
 * run on many servers over one database. Each key space is a PostgreSQL table
 * {@code (k bytea PRIMARY KEY, v bytea NOT NULL)}, named as the space where PostgreSQL allows it
 * (see {@link #relationName}); {@code bytea} compares bytewise, shorter first, as LMDB orders keys,
 * so ranges, pages and tuple keys read the same. A registry table, {@value #REGISTRY}, maps spaces
 * to tables. They live in the schema the URL's {@code currentSchema} names, else in one of kiln's
 * own, {@value #DEFAULT_SCHEMA} (but for a database where an earlier kiln made them in
 * {@code public}: they are used there, and a warning says how to move them), and every statement
 * names the schema: a table called {@code pg_type} is kiln's, not PostgreSQL's catalog.
 *
 * <pre>{@code
 * Db db = Db.open("postgresql://127.0.0.1:5432/kiln?user=kiln");   // through PostgresEngineProvider
 * }</pre>
 *
 * <h2>Transactions</h2>
 * <ul>
 *   <li><b>Reads</b> run in {@code REPEATABLE READ, READ ONLY} transactions (a snapshot, as LMDB's
 *       readers) on a pool of {@code readConnections} connections (HikariCP), one per read thread of the
 *       database ({@link #readThreads}), each running every read waiting at once in one
 *       transaction: JDBC blocks, so a read never runs on a fiber's carrier.</li>
 *   <li><b>Writes</b> run on the database's one writer thread, in {@code SERIALIZABLE}
 *       transactions on a connection of their own, one server at a time: a server's writer holds a
 *       PostgreSQL advisory lock while it runs and commits a batch ({@link #beginWrite}), so batches of
 *       two servers never conflict (every server appends to a change feed's log: optimistic
 *       writers would conflict on nearly every batch). A batch's write queries and their nested
 *       transactions keep their writes in memory ({@link kiln.db.KvWriteBuffer}: no savepoints, no
 *       subtransactions) and the commit sends them in one batch of statements, then
 *       {@code COMMIT}. A serialization failure (SQLSTATE 40001, or a deadlock, 40P01: with another
 *       client writing kiln's tables) is a {@link KvTxn.Conflict}: the writer runs the batch again,
 *       as FoundationDB re-runs a transaction, which is why write queries must be re-runnable and
 *       touch nothing outside their transaction.</li>
 *   <li><b>Other servers' commits</b>: every commit sends {@code NOTIFY kiln_commits, '<space>'} for
 *       each space it wrote; {@link #onCommits} listens on a connection of its own (passing over
 *       the notifications of this engine's own writer), and also reports "anything" every
 *       {@value #POLL_MILLIS} ms and after a reconnect, in case a notification was missed.</li>
 * </ul>
 *
 * <h2>Errors</h2>
 * A connection that fails or cannot be had (the server down, restarting, out of connections, a
 * standby that will not write) is {@link DbException.Unavailable}: the query fails at once (503),
 * and while the server stays unreachable later queries fail at once too, but for one attempt every
 * {@value #RETRY_MILLIS} ms, which notices its return. A connection lost during {@code COMMIT}
 * leaves the outcome unknown, and the message says so. Nothing is fatal: PostgreSQL keeps the data.
 *
 * <h2>Waits</h2>
 * A server that answers nothing (paused, cut off, a commit waiting for a synchronous standby) holds a
 * connection until PgJDBC's socket timeout; the database's deadline ({@link kiln.db.Db.Builder#deadline})
 * answers the queries waiting meanwhile. So that work nobody waits for does not go on and pile up on
 * the server, the read connections' sessions end a statement that runs
 * {@value #READ_STATEMENT_GRACE_MILLIS} ms past the deadline ({@code statement_timeout}), their socket
 * timeout follows it ({@link #deadline}), and every session has TCP keep-alives, so that PostgreSQL
 * notices a peer gone. The writer's session has none of the statement timeout: see {@link #pool}.
 */
public final class PostgresEngine implements KvEngine {
    private static final Logger LOG = Logger.getLogger(PostgresEngine.class.getName());
    /** The table that names every space's table. */
    static final String REGISTRY = "kiln_spaces";
    /** The schema of kiln's tables when the URL names none ({@code currentSchema}). */
    public static final String DEFAULT_SCHEMA = "kiln";
    /** How often the listener reports "anything may have changed", ms. */
    static final int POLL_MILLIS = 1000;
    /** While the server is unreachable, how often one query tries it again, ms. */
    static final int RETRY_MILLIS = 500;
    /**
     * How long the writer's session may sit idle inside its transaction, ms: PostgreSQL ends a
     * session idle longer ({@code idle_in_transaction_session_timeout}), which rolls its transaction
     * back and lets the write lock go. A batch sends its statements back to back, so only a server
     * that hangs (paused, cut off, a write query that never ends) is idle that long; the others'
     * writers then go on within about this long, and the hung one commits nothing.
     */
    public static final int WRITER_IDLE_MILLIS = 5_000;
    /** How long a writer waits for the write lock another server holds, ms ({@code lock_timeout}): then its batch fails, 503. */
    public static final int WRITE_LOCK_WAIT_MILLIS = 10_000;
    /** Default number of read connections (and read threads). */
    public static final int DEFAULT_READ_CONNECTIONS = 8;
    /**
     * How long past the database's deadline a read statement may run, ms: PostgreSQL then ends it
     * ({@code statement_timeout} on the read connections; see {@link #deadline}).
     */
    public static final int READ_STATEMENT_GRACE_MILLIS = 1_000;
    /** PgJDBC's socket timeout, s, unless the URL gives one: the writer's, and the read connections' without a deadline. */
    static final int SOCKET_TIMEOUT_SECONDS = 30;
    /**
     * Every session's TCP keep-alives, on PostgreSQL's side of the connection: a peer gone (a
     * partition, a machine lost) is noticed within about 11 s, and its backend ends.
     */
    private static final String KEEPALIVES = "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3";

    private final String jdbcUrl;
    private final String shownUrl;
    // Set once by open(), before the engine is handed out: the schema of kiln's tables, quoted, and
    // the advisory lock key the writers of every server over it take turns with (see beginWrite).
    private String schema;
    private int writeLock;
    /** The PostgreSQL backend (process id) of this engine's write connection: its own commits' notifications are not news. */
    private volatile int writerBackend;
    private final HikariDataSource reads;
    /** The writer's connection; null when opened {@linkplain #openReadOnly read-only}. */
    private final HikariDataSource writes;
    private final int readConnections;
    /** System.nanoTime() until which the server counts as unreachable (0: reachable); see {@link #connect}. */
    private volatile long unreachableUntil;
    private volatile String unreachableWhy;
    private volatile boolean closed;
    private Thread listener;

    private PostgresEngine(String url, int readConnections, boolean readOnly) {
        this.jdbcUrl = jdbcUrl(url);
        this.shownUrl = KvEngines.redact(jdbcUrl);
        this.reads = new HikariDataSource();  // started by the first read, after deadline() has set its sessions up
        configure(reads, "kiln-pg-reads", readConnections, true);
        this.writes = readOnly ? null : pool("kiln-pg-writes", 1, false);
        this.readConnections = readConnections;
    }

    /**
     * Opens the engine on the PostgreSQL database at {@code url} with {@value #DEFAULT_READ_CONNECTIONS}
     * read connections, or as many as the URL's {@code readConnections} parameter says. It creates the
     * schema (the URL's {@code currentSchema}, else {@value #DEFAULT_SCHEMA}) and the registry table
     * when missing.
     *
     * @param url {@code postgresql://[user[:password]@]host[:port][,host[:port]...]/database[?param=value&...]} (libpq's form) or
     *            {@code jdbc:postgresql://...}; parameters are PgJDBC's ({@code user}, {@code password},
     *            {@code currentSchema}, {@code sslmode}, ...) and {@code readConnections}
     * @throws IllegalArgumentException when the URL is neither form
     * @throws DbException.Unavailable when the database cannot be reached
     */
    public static PostgresEngine open(String url) {
        Map<String, String> params = params(url);
        int n = readConnections(params.remove("readConnections"));
        PostgresEngine engine = new PostgresEngine(withParams(url, params), n, false);
        try {
            engine.createRegistry(params.get("currentSchema"));
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
        return engine;
    }

    /**
     * Opens the engine on the kiln database at {@code url} to read it only, beside the servers that
     * use it: nothing is created (the schema and its registry must be there), no writer's connection
     * is made, and {@link #beginWrite} is refused. Reads run on {@code readConnections} connections,
     * by default {@value #READ_ONLY_CONNECTIONS}: a tool's, not a server's.
     *
     * @throws IllegalArgumentException when the URL is neither form
     * @throws DbException.Unavailable when the database cannot be reached
     * @throws DbException when it holds no kiln database in the schema (no {@value #REGISTRY} table)
     */
    public static PostgresEngine openReadOnly(String url) {
        Map<String, String> params = params(url);
        String given = params.remove("readConnections");
        int n = given == null ? READ_ONLY_CONNECTIONS : readConnections(given);
        PostgresEngine engine = new PostgresEngine(withParams(url, params), n, true);
        try {
            engine.findRegistry(params.get("currentSchema"));
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
        return engine;
    }

    /** Read connections of an engine opened read-only, unless its URL says otherwise. */
    static final int READ_ONLY_CONNECTIONS = 2;

    /**
     * Checks a URL as {@link #open} takes it, without connecting: for a command line.
     *
     * @throws IllegalArgumentException naming what is wrong: not a PostgreSQL URL, or {@code readConnections}
     *         not 1..1000
     */
    public static void checkUrl(String url) {
        jdbcUrl(url);
        readConnections(params(url).get("readConnections"));
    }

    private static int readConnections(String value) {
        if (value == null) return DEFAULT_READ_CONNECTIONS;
        int n;
        try {
            n = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            n = 0;
        }
        if (n < 1 || n > 1000) throw new IllegalArgumentException("readConnections must be 1..1000, got '" + value + "'");
        return n;
    }

    /** @return whether {@code url} names a PostgreSQL database ({@code postgresql://} or {@code jdbc:postgresql://}) */
    public static boolean isUrl(String url) {
        return url.startsWith("postgresql://") || url.startsWith("postgres://") || url.startsWith("jdbc:postgresql:");
    }

    /** @return the JDBC URL without its password, for logs and messages */
    public String url() {
        return shownUrl;
    }

    /** @return the JDBC URL without its password */
    @Override
    public String location() {
        return shownUrl;
    }

    /** @return {@code PostgreSQL at} and the URL without its password, for messages */
    @Override
    public String toString() {
        return "PostgreSQL at " + shownUrl;
    }

    private HikariDataSource pool(String name, int size, boolean readOnly) {
        HikariConfig c = new HikariConfig();
        configure(c, name, size, readOnly);
        return new HikariDataSource(c);
    }

    private void configure(HikariConfig c, String name, int size, boolean readOnly) {
        c.setPoolName(name);
        c.setJdbcUrl(jdbcUrl);
        c.setMaximumPoolSize(size);
        c.setMinimumIdle(size);
        c.setAutoCommit(false);
        c.setReadOnly(readOnly);
        c.setTransactionIsolation(readOnly ? "TRANSACTION_REPEATABLE_READ" : "TRANSACTION_SERIALIZABLE");
        c.setConnectionTimeout(1000);
        c.setValidationTimeout(500);
        c.setInitializationFailTimeout(-1);  // open even while the server is down; queries say so
        // Hikari runs the sessions' SETs below in the connection's first transaction; this commits it. Left
        // open, the first rollback (every read transaction's end) would undo them, and a connection not yet
        // used would sit idle in that transaction (the writer's ended by its own idle_in_transaction_session_timeout).
        c.setIsolateInternalQueries(true);
        if (readOnly) {
            c.setConnectionInitSql(KEEPALIVES);  // and a statement timeout by the deadline: see deadline()
        } else {
            // The writer's session: ended by PostgreSQL when it hangs in its transaction (which lets the
            // write lock go), a bounded wait for the lock, and a peer gone (a partition) noticed by
            // PostgreSQL's keep-alives within about 11 s.
            //
            // No statement_timeout here, whatever the deadline. It would not end the wait that matters,
            // a COMMIT waiting for a synchronous standby: PostgreSQL stops the statement timer before it
            // commits (postgres.c, finish_xact_command; on 15.18 a COMMIT under statement_timeout = 1s
            // waited until its client gave up, and committed). And what does end that wait early, a
            // cancel (pg_cancel_backend, PgJDBC's Statement.cancel or setQueryTimeout), PostgreSQL
            // answers as a successful COMMIT with only a WARNING: "canceling wait for synchronous
            // replication due to user request", "The transaction has already committed locally, but
            // might not have been replicated to the standby". kiln would acknowledge a write that a
            // failover to the standby loses. So nothing here cancels the writer's statements: the
            // database's deadline answers the writes' callers (outcome unknown), and the writer keeps
            // the long socket timeout and learns its commit's real outcome. Breaking the connection
            // sooner would tell no caller anything truer, and would leave its backend, still waiting
            // for the standby, holding the write lock that the next batch then waits for.
            c.setConnectionInitSql("SET idle_in_transaction_session_timeout = " + WRITER_IDLE_MILLIS + "; SET lock_timeout = "
                + WRITE_LOCK_WAIT_MILLIS + "; " + KEEPALIVES);
        }
        c.addDataSourceProperty("tcpKeepAlive", "true");
        if (!jdbcUrl.contains("socketTimeout=")) c.addDataSourceProperty("socketTimeout", Integer.toString(SOCKET_TIMEOUT_SECONDS));
        if (!jdbcUrl.contains("connectTimeout=")) c.addDataSourceProperty("connectTimeout", "2");
    }

    /**
     * Sets up the read connections' sessions by the database's deadline, before the first read:
     * PostgreSQL ends a read statement that runs {@value #READ_STATEMENT_GRACE_MILLIS} ms past it
     * ({@code statement_timeout}), so a read whose caller was answered at the deadline does not go
     * on on the server (a lock it waits for, a scan); and their socket timeout becomes that plus 2 s
     * (in whole seconds, as PgJDBC takes it) instead of {@value #SOCKET_TIMEOUT_SECONDS} s, unless the
     * URL gives one: a live server has answered by then, so a read thread held by a server that
     * answers nothing (paused, cut off) is let go sooner, and the engine counts the server
     * unreachable. Without a deadline (zero) they stay as they are. The writer's session is left
     * alone (see {@link #pool}).
     *
     * @throws IllegalStateException after the first read: the read connections are made already
     */
    @Override
    public synchronized void deadline(java.time.Duration deadline) {
        if (reads.getHikariPoolMXBean() != null) {
            throw new IllegalStateException("the deadline of " + this + " must be set before its first read");
        }
        if (deadline.isZero()) return;
        long statementMillis = deadline.toMillis() + READ_STATEMENT_GRACE_MILLIS;
        reads.setConnectionInitSql("SET statement_timeout = " + statementMillis + "; " + KEEPALIVES);
        if (!jdbcUrl.contains("socketTimeout=")) reads.addDataSourceProperty("socketTimeout", Long.toString((statementMillis + 999) / 1000 + 2));
    }

    /** Chooses the schema ({@link #schema}, {@link #writeLock}) and makes it and the registry table where missing. */
    private void createRegistry(String named) {
        try (Connection c = connect(writes)) {
            String chosen = named != null ? named : defaultSchema(c);
            schema = quote(chosen);
            writeLock = ("kiln.writer:" + chosen).hashCode();
            try (Statement s = c.createStatement()) {
                s.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
                s.execute("CREATE TABLE IF NOT EXISTS " + table(REGISTRY) + " (name text COLLATE \"C\" PRIMARY KEY, relname text NOT NULL UNIQUE)");
                c.commit();
            } catch (SQLException e) {
                c.rollback();
                if (!"23505".equals(e.getSQLState()) && !"42P06".equals(e.getSQLState())) throw e;  // another server made it meanwhile
            }
        } catch (SQLException e) {
            throw failure(e, "creating the registry table " + REGISTRY, false);
        }
    }

    /**
     * Chooses the schema as {@link #createRegistry} does, on a read connection, and checks that its
     * registry is there: a read-only engine creates nothing.
     */
    private void findRegistry(String named) {
        try (Connection c = connect(reads)) {
            try {
                String chosen = named != null ? named : defaultSchema(c);
                schema = quote(chosen);
                writeLock = ("kiln.writer:" + chosen).hashCode();
                boolean there;
                try (PreparedStatement s = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
                    s.setString(1, table(REGISTRY));
                    try (ResultSet r = s.executeQuery()) {
                        r.next();
                        there = r.getBoolean(1);
                    }
                }
                if (!there) {
                    throw new DbException("no kiln database at " + shownUrl + ": schema " + chosen + " has no table " + REGISTRY
                        + " (currentSchema=NAME in the URL names another schema)", null);
                }
            } finally {
                c.rollback();
            }
        } catch (SQLException e) {
            throw failure(e, "looking for the registry table " + REGISTRY, false);
        }
    }

    /**
     * @return {@value #DEFAULT_SCHEMA}; or {@code public} where kiln's tables are there and not in
     *         {@value #DEFAULT_SCHEMA} (made by a kiln before it had a schema of its own), with a
     *         warning that says how to move them
     */
    private String defaultSchema(Connection c) throws SQLException {
        boolean inPublic;
        boolean inOwn;
        try (Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT to_regclass('public." + REGISTRY + "') IS NOT NULL, to_regclass('"
                 + DEFAULT_SCHEMA + "." + REGISTRY + "') IS NOT NULL")) {
            r.next();
            inPublic = r.getBoolean(1);
            inOwn = r.getBoolean(2);
        }
        c.rollback();
        if (!inPublic || inOwn) return DEFAULT_SCHEMA;
        LOG.warning("kiln's tables in " + shownUrl + " are in schema public, where earlier versions of kiln made them; they are used there."
            + " To move them to a schema of their own: stop every kiln server, run ALTER TABLE ... SET SCHEMA " + DEFAULT_SCHEMA
            + " for public." + REGISTRY + " and each table it lists (after CREATE SCHEMA " + DEFAULT_SCHEMA + "); or add"
            + " currentSchema=public to the URL to keep them there and silence this");
        return "public";
    }

    /** @return the schema-qualified, quoted name of table {@code relname} */
    String table(String relname) {
        return schema + "." + quote(relname);
    }

    @Override
    public KvSpace space(KvTxn txn, String name, boolean create) {
        PostgresTxn t = (PostgresTxn) txn;
        try {
            try (PreparedStatement s = t.connection().prepareStatement("SELECT relname FROM " + table(REGISTRY) + " WHERE name = ?")) {
                s.setString(1, name);
                try (ResultSet r = s.executeQuery()) {
                    if (r.next()) return new Space(name, table(r.getString(1)));
                }
            }
            if (!create) return null;
            String relname = relationName(name);
            try (Statement s = t.connection().createStatement()) {
                s.execute("CREATE TABLE IF NOT EXISTS " + table(relname) + " (k bytea PRIMARY KEY, v bytea NOT NULL)");
            }
            try (PreparedStatement s = t.connection().prepareStatement("INSERT INTO " + table(REGISTRY) + " (name, relname) VALUES (?, ?)")) {
                s.setString(1, name);
                s.setString(2, relname);
                s.executeUpdate();
            }
            return new Space(name, table(relname));
        } catch (SQLException e) {
            if ("23505".equals(e.getSQLState()) || "42P07".equals(e.getSQLState())) {
                // another server created it at the same moment: run again, and find it
                throw t.conflict(new KvTxn.Conflict("space '" + name + "' was created by another server meanwhile", e));
            }
            throw t.failed(e, "opening space '" + name + "'");
        }
    }

    /**
     * @return the table name of space {@code name}: the name itself when PostgreSQL can hold it (at
     *         most 63 bytes, no NUL, not the registry's), else its first characters, {@code #} and 8
     *         hex digits of its SHA-256
     */
    static String relationName(String name) {
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        if (utf8.length <= 63 && name.indexOf('\0') < 0 && !name.equals(REGISTRY)) return name;
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < name.length() && b.toString().getBytes(StandardCharsets.UTF_8).length < 48; ) {
            int cp = name.codePointAt(i);
            if (cp != 0) b.appendCodePoint(cp);
            i += Character.charCount(cp);
        }
        try {
            byte[] h = java.security.MessageDigest.getInstance("SHA-256").digest(utf8);
            return b + "#" + java.util.HexFormat.of().formatHex(h, 0, 4);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static String quote(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    @Override
    public List<String> spaceNames(KvTxn txn) {
        PostgresTxn t = (PostgresTxn) txn;
        List<String> names = new ArrayList<>();
        try (Statement s = t.connection().createStatement();
             ResultSet r = s.executeQuery("SELECT name FROM " + table(REGISTRY) + " ORDER BY name")) {  // COLLATE "C": UTF-8 byte order
            while (r.next()) names.add(r.getString(1));
        } catch (SQLException e) {
            throw t.failed(e, "listing the spaces");
        }
        return names;
    }

    @Override
    public KvTxn beginRead() {
        return new PostgresTxn(this::failure, connect(reads), true);
    }

    /**
     * Begins the writer's transaction once this server holds the write lock: a session-level advisory
     * lock ({@link #writeLock}), taken outside the transaction so that the transaction's snapshot is
     * taken after the lock, that is after the last server's commit. Writers on every server take turns,
     * as on LMDB one writer at a time, and their batches never conflict with each other; each server
     * still commits all its waiting writes together.
     */
    @Override
    public KvTxn beginWrite() {
        if (writes == null) throw new IllegalStateException("the PostgreSQL engine at " + shownUrl + " is open read-only");
        Connection c = connect(writes);
        try {
            c.setAutoCommit(true);
            try (Statement s = c.createStatement()) {
                s.execute("SELECT pg_advisory_lock(" + writeLock + ")");
            }
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                // the transaction begins now, its snapshot after the lock: from here on a writer that
                // hangs is idle in its transaction, and PostgreSQL ends it (WRITER_IDLE_MILLIS)
                s.execute("SELECT 1");
            }
            writerBackend = c.unwrap(org.postgresql.PGConnection.class).getBackendPID();
        } catch (SQLException e) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // the pool drops a broken connection
            }
            throw failure(e, "taking the write lock", false);
        }
        return new PostgresTxn(this::failure, c, false);
    }

    /**
     * @return a connection of {@code pool}; while the server is unreachable, fails at once but for one
     *         attempt every {@value #RETRY_MILLIS} ms
     * @throws DbException.Unavailable when none can be had
     */
    private Connection connect(HikariDataSource pool) {
        if (closed) throw new DbException.Closed("the PostgreSQL engine at " + shownUrl + " is closed");
        long until = unreachableUntil;
        if (until != 0 && System.nanoTime() - until < 0) {
            throw new DbException.Unavailable("PostgreSQL at " + shownUrl + " is unreachable: " + unreachableWhy + " (trying again every "
                + RETRY_MILLIS + " ms)", null);
        }
        try {
            Connection c = pool.getConnection();
            unreachableUntil = 0;
            return c;
        } catch (SQLException e) {
            unreachable(e);
            throw new DbException.Unavailable("PostgreSQL at " + shownUrl + " is unreachable: " + e.getMessage(), e);
        }
    }

    /** Counts the server unreachable for the next {@value #RETRY_MILLIS} ms. */
    void unreachable(SQLException e) {
        unreachableWhy = e.getMessage();
        if (unreachableUntil == 0) LOG.warning("PostgreSQL at " + shownUrl + " is unreachable: " + e.getMessage());
        unreachableUntil = (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_MILLIS)) | 1;
    }

    /**
     * @param commit true when {@code e} came from {@code COMMIT}: a lost connection then leaves the outcome unknown
     * @return what {@code e} means to the database: a {@link KvTxn.Conflict}, {@link DbException.Unavailable}
     *         when the server or the connection failed, else a {@link DbException} with PostgreSQL's message
     */
    RuntimeException failure(SQLException e, String what, boolean commit) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        if (state.equals("40001") || state.equals("40P01")) {
            return new KvTxn.Conflict(what + ": " + e.getMessage(), e);
        }
        if (state.equals("25P03")) {  // this server's writer hung in its transaction (see WRITER_IDLE_MILLIS)
            return new DbException.Unavailable("PostgreSQL at " + shownUrl + " ended this server's write transaction, idle in it for over "
                + WRITER_IDLE_MILLIS + " ms (the write lock went to the other servers): nothing of it was committed", e);
        }
        if (state.equals("55P03")) {  // lock_timeout: another server holds the write lock
            return new DbException.Unavailable("another server has held the write lock on PostgreSQL at " + shownUrl + " for over "
                + WRITE_LOCK_WAIT_MILLIS + " ms (" + what + "); retry shortly", e);
        }
        if (state.startsWith("08") || state.startsWith("57P") || state.equals("53300") || state.equals("25006")
                || e instanceof java.sql.SQLTransientConnectionException || e instanceof java.sql.SQLNonTransientConnectionException) {
            if (!state.equals("25006")) unreachable(e);
            String outcome = commit ? "; the connection broke during COMMIT, so whether the writes were applied is unknown"
                + " (a write sent with an idempotency key is safe to retry with the same key)" : "";
            return new DbException.Unavailable("PostgreSQL at " + shownUrl + " failed " + what + ": " + e.getMessage() + outcome, e);
        }
        return new DbException("PostgreSQL failed " + what + " (SQLSTATE " + state + "): " + e.getMessage(), e);
    }

    @Override
    public long verify(KvTxn txn, KvSpace space) {
        PostgresTxn t = (PostgresTxn) txn;
        long n = 0;
        byte[] last = null;
        try (kiln.db.KvCursor r = t.range(space, null, null, false, 0)) {
            while (r.next()) {
                byte[] key = PostgresTxn.bytes(r.key());
                if (last != null && java.util.Arrays.compareUnsigned(last, key) >= 0) {
                    throw new IllegalStateException("space '" + space.name() + "': keys out of order after entry " + n);
                }
                last = key;
                n++;
            }
        }
        long counted = t.count(space);
        if (counted != n) throw new IllegalStateException("space '" + space.name() + "': " + n + " entries read, count(*) says " + counted);
        return n;
    }

    @Override
    public Path backup(Path target, long mark) {
        throw new UnsupportedOperationException("a database on PostgreSQL is backed up by PostgreSQL (pg_basebackup, or pg_dump of "
            + shownUrl + "): see docs/scaling.md");
    }

    @Override
    public String fatalCause(RuntimeException e) {
        return null;  // PostgreSQL keeps the data: a failure is a query's, or the server's for a while
    }

    @Override
    public KvStats stats() {
        var pool = reads.getHikariPoolMXBean();
        if (pool == null) return new KvStats(0, 0, 0, 0, reads.getMaximumPoolSize());
        return new KvStats(0, 0, pool.getActiveConnections(), pool.getIdleConnections(), reads.getMaximumPoolSize());
    }

    /** @return the read connections: the database runs as many read threads, a connection each */
    @Override
    public int readThreads() {
        return readConnections;
    }

    @Override
    public synchronized void onCommits(Consumer<String> changed) {
        if (listener != null) throw new IllegalStateException("onCommits was called already");
        listener = new Thread(() -> listen(changed), "kiln-pg-listener");
        listener.setDaemon(true);
        listener.start();
    }

    /**
     * The listener's loop: LISTEN on a connection of its own, report each notification's space, and
     * "anything" ({@code null}) every {@value #POLL_MILLIS} ms and after every (re)connect; a broken
     * connection is made again every second until {@link #close}.
     */
    private void listen(Consumer<String> changed) {
        boolean warned = false;
        while (!closed) {
            try (Connection c = java.sql.DriverManager.getConnection(jdbcUrl)) {
                try (Statement s = c.createStatement()) {
                    s.execute("LISTEN " + PostgresTxn.CHANNEL);
                }
                if (warned) LOG.info("listening for commits on " + shownUrl + " again");
                warned = false;
                org.postgresql.PGConnection pg = c.unwrap(org.postgresql.PGConnection.class);
                tell(changed, null);
                long polled = System.nanoTime();
                while (!closed) {
                    org.postgresql.PGNotification[] got = pg.getNotifications(POLL_MILLIS);
                    if (got != null) {
                        for (org.postgresql.PGNotification n : got) {
                            if (n.getPID() != writerBackend) tell(changed, n.getParameter());  // not this server's own commit
                        }
                    }
                    if (System.nanoTime() - polled >= TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS)) {
                        tell(changed, null);
                        polled = System.nanoTime();
                    }
                }
            } catch (SQLException e) {
                if (closed) return;
                if (!warned) LOG.warning("listening for commits on " + shownUrl + " failed (" + e.getMessage() + "); polling until it is back");
                warned = true;
                tell(changed, null);
                try {
                    Thread.sleep(POLL_MILLIS);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    private static void tell(Consumer<String> changed, String space) {
        try {
            changed.accept(space);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "a commit listener failed", e);
        }
    }

    @Override
    public void close() {
        Thread l;
        synchronized (this) {
            if (closed) return;
            closed = true;
            l = listener;
        }
        if (l != null) l.interrupt();
        reads.close();
        if (writes != null) writes.close();
    }

    /**
     * The other client sessions on this engine's database ({@code pg_stat_activity}), leaving out
     * those named as this engine's own: every session whose {@code application_name} is this one's
     * (the URL's {@code ApplicationName}; a tool that must write alone gives its engine a name of its
     * own). Other users' sessions are listed too: PostgreSQL shows their process id, user and
     * application name to everyone.
     */
    @Override
    public List<String> otherClients() {
        List<String> others = new ArrayList<>();
        try (Connection c = connect(reads)) {
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT pid, usename, application_name FROM pg_stat_activity WHERE datname = current_database()"
                     + " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                     + " AND application_name IS DISTINCT FROM current_setting('application_name') ORDER BY pid")) {
                while (r.next()) {
                    String app = r.getString(3);
                    others.add("session " + r.getInt(1) + " of user " + r.getString(2) + (app == null || app.isEmpty() ? "" : " ('" + app + "')"));
                }
            } finally {
                c.rollback();
            }
        } catch (SQLException e) {
            throw failure(e, "listing the other sessions", false);
        }
        return others;
    }

    // ---- URLs ----

    /** @return {@code url} as PgJDBC takes it: {@code jdbc:postgresql://host:port/db?...}, user and password as parameters */
    static String jdbcUrl(String url) {
        if (url.startsWith("jdbc:postgresql:")) return url;
        if (!url.startsWith("postgresql://") && !url.startsWith("postgres://")) {
            throw new IllegalArgumentException("not a PostgreSQL URL (postgresql://host:port/database or jdbc:postgresql://...): " + KvEngines.redact(url));
        }
        String rest = url.substring(url.indexOf("://") + 3);
        int q = rest.indexOf('?');
        if (q >= 0) rest = rest.substring(0, q);
        int slash = rest.indexOf('/');
        String authority = slash < 0 ? rest : rest.substring(0, slash);
        String db = slash < 0 ? "/" : rest.substring(slash);
        int at = authority.lastIndexOf('@');
        String hosts = authority.substring(at + 1);  // host[:port][,host[:port]...]: PgJDBC takes the same list
        Map<String, String> params = params(url);
        if (at >= 0) {
            String info = authority.substring(0, at);
            int colon = info.indexOf(':');
            params.putIfAbsent("user", decode(colon < 0 ? info : info.substring(0, colon)));
            if (colon >= 0) params.putIfAbsent("password", decode(info.substring(colon + 1)));
        }
        return withParams("jdbc:postgresql://" + (hosts.isEmpty() ? "localhost" : hosts) + db, params);
    }

    /** @return the URL's query parameters, decoded, in order */
    static Map<String, String> params(String url) {
        Map<String, String> params = new LinkedHashMap<>();
        int q = url.indexOf('?');
        if (q < 0) return params;
        for (String pair : url.substring(q + 1).split("&")) {
            if (pair.isEmpty()) continue;
            int eq = pair.indexOf('=');
            params.put(decode(eq < 0 ? pair : pair.substring(0, eq)), eq < 0 ? "" : decode(pair.substring(eq + 1)));
        }
        return params;
    }

    private static String withParams(String url, Map<String, String> params) {
        int q = url.indexOf('?');
        StringBuilder b = new StringBuilder(q < 0 ? url : url.substring(0, q));
        char sep = '?';
        for (Map.Entry<String, String> e : params.entrySet()) {
            b.append(sep).append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
                .append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
            sep = '&';
        }
        return b.toString();
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }
}

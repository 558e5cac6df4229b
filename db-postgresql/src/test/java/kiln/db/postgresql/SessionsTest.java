package kiln.db.postgresql;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.QueryFuture;
import kiln.db.Table;

/**
 * The engine's sessions by the database's deadline: a read connection's session ends a statement a
 * second past the deadline ({@code statement_timeout}), so a read whose caller was answered at the
 * deadline does not wait on in PostgreSQL, and its socket timeout follows the deadline; the writer's
 * session has no statement timeout (a cancelled COMMIT waiting for a synchronous standby is answered
 * as committed) and keeps the 30 s socket timeout; every session has TCP keep-alives.
 */
class SessionsTest {
    @TempDir
    Path dir;

    private static String show(PostgresTxn txn, String setting) throws SQLException {
        try (Statement s = txn.connection().createStatement(); ResultSet r = s.executeQuery("SHOW " + setting)) {
            r.next();
            return r.getString(1);
        }
    }

    @Test
    void readSessionsEndAStatementASecondPastTheDeadlineAndTheWritersNever() throws Exception {
        PostgresEngine engine = (PostgresEngine) TestPostgres.engine(dir);
        try {
            engine.deadline(Duration.ofMillis(1500));
            for (int i = 0; i < 2; i++) {  // the second after the first's rollback, which must not undo the settings
                try (PostgresTxn read = (PostgresTxn) engine.beginRead()) {
                    assertEquals("2500ms", show(read, "statement_timeout"), "read transaction " + (i + 1));
                    assertEquals("5", show(read, "tcp_keepalives_idle"));
                    assertEquals(5_000, read.connection().getNetworkTimeout(), "socket timeout: 2.5 s in whole seconds, and 2 s");
                }
            }
            for (int i = 0; i < 2; i++) {
                try (PostgresTxn write = (PostgresTxn) engine.beginWrite()) {
                    assertEquals("0", show(write, "statement_timeout"), "write transaction " + (i + 1));
                    assertEquals("5", show(write, "tcp_keepalives_idle"));
                    assertEquals("5s", show(write, "idle_in_transaction_session_timeout"));
                    assertEquals(30_000, write.connection().getNetworkTimeout());
                }
            }
            IllegalStateException late = assertThrows(IllegalStateException.class, () -> engine.deadline(Duration.ofSeconds(5)));
            assertTrue(late.getMessage().contains("must be set before its first read"), late.getMessage());
        } finally {
            engine.close();
        }
    }

    @Test
    void withoutADeadlineReadSessionsHaveNoStatementTimeout() throws Exception {
        PostgresEngine engine = (PostgresEngine) TestPostgres.engine(dir);
        try {
            engine.deadline(Duration.ZERO);
            for (int i = 0; i < 2; i++) {
                try (PostgresTxn read = (PostgresTxn) engine.beginRead()) {
                    assertEquals("0", show(read, "statement_timeout"));
                    assertEquals("5", show(read, "tcp_keepalives_idle"), "read transaction " + (i + 1));
                    assertEquals(30_000, read.connection().getNetworkTimeout());
                }
            }
        } finally {
            engine.close();
        }
    }

    /**
     * A read waiting for a lock another session holds: its caller is answered at the deadline, and
     * PostgreSQL ends its statement a second later, while the lock is still held: no backend is left
     * waiting for a read nobody waits for. The reader's connection serves the next read.
     */
    @Test
    void aReadTheDatabaseGaveUpOnEndsInPostgresqlToo() throws Exception {
        Duration deadline = Duration.ofSeconds(1);
        try (Db db = Db.builder(TestPostgres.engine(dir)).deadline(deadline).open();
             Connection locker = DriverManager.getConnection(TestPostgres.url())) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 1, "one"); return null; }).get(30, SECONDS);
            String table = TestPostgres.schema(dir) + ".notes";
            String waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = '" + table + "'::regclass";
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
                long asked = System.nanoTime();
                QueryFuture<String> read = db.read(txn -> t.get(txn, 1));
                ExecutionException e = assertThrows(ExecutionException.class, () -> read.get(deadline.toMillis() + 3_000, MILLISECONDS));
                assertInstanceOf(DbException.DeadlineExceeded.class, e.getCause());
                long ended = -1;
                while (ended < 0 && System.nanoTime() - asked < SECONDS.toNanos(15)) {
                    try (ResultSet r = s.executeQuery(waiting)) {
                        r.next();
                        if (r.getLong(1) == 0) ended = MILLISECONDS.convert(System.nanoTime() - asked, java.util.concurrent.TimeUnit.NANOSECONDS);
                    }
                    Thread.sleep(50);
                }
                long most = deadline.toMillis() + PostgresEngine.READ_STATEMENT_GRACE_MILLIS + 3_000;
                assertTrue(ended >= 0 && ended < most, "PostgreSQL ended the read's wait for the lock "
                    + (ended < 0 ? "never (15 s)" : "after " + ended + " ms") + ", the lock still held; expected under " + most + " ms");
            } finally {
                locker.rollback();
            }
            assertEquals("one", db.read(txn -> t.get(txn, 1)).get(30, SECONDS), "reads go on");
        }
    }
}

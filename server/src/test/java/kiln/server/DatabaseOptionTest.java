package kiln.server;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.QueryFuture;
import picocli.CommandLine;

/** --db: an engine's URL checked when the command line is read, before anything connects; --db-deadline. */
class DatabaseOptionTest {
    @Test
    void aPostgresqlUrlIsTakenAndLmdbIsTheDefault() {
        assertEquals("postgresql://kiln@127.0.0.1:5432/kiln?readConnections=4",
            ServerOptions.of("--db", "postgresql://kiln@127.0.0.1:5432/kiln?readConnections=4").db);
        assertEquals(null, ServerOptions.of().db, "LMDB in --data unless --db is given");
    }

    @Test
    void aBadUrlIsAUsageErrorNamingWhatIsWrong() {
        String noEngine = assertThrows(CommandLine.ParameterException.class,
            () -> ServerOptions.of("--db", "mysql://me:secret@h/d")).getMessage();
        assertTrue(noEngine.contains("--db: no database engine on the class path opens 'mysql://me:***@h/d'; engines found: ")
            && noEngine.contains("lmdb (lmdb:DIR") && noEngine.contains("postgresql (postgresql://"), noEngine);
        String lmdb = assertThrows(CommandLine.ParameterException.class, () -> ServerOptions.of("--db", "lmdb:d?maxReaders=x")).getMessage();
        assertTrue(lmdb.contains("--db: maxReaders must be a whole number, got 'x'"), lmdb);
        String readers = assertThrows(CommandLine.ParameterException.class,
            () -> ServerOptions.of("--db", "postgresql://h/d?readConnections=0")).getMessage();
        assertTrue(readers.contains("readConnections must be 1..1000, got '0'"), readers);
        String backup = assertThrows(CommandLine.ParameterException.class,
            () -> ServerOptions.of("--db", "postgresql://h/d", "--backup", "/tmp/x")).getMessage();
        assertTrue(backup.contains("pg_basebackup"), backup);
    }

    @Test
    void theDatabaseDeadlineIsFiveSecondsByDefaultZeroForNoneAndTooShortAUsageError() {
        assertEquals(Db.DEFAULT_DEADLINE.toMillis(), ServerOptions.of().dbDeadlineMs, "the database's own default");
        assertEquals(0, ServerOptions.of("--db-deadline", "0").dbDeadlineMs);
        for (String bad : new String[] {"50", "-1", "86400001"}) {
            String e = assertThrows(CommandLine.ParameterException.class, () -> ServerOptions.of("--db-deadline", bad)).getMessage();
            assertTrue(e.contains("--db-deadline must be 0 (none) or 100..86400000 ms, got " + bad), e);
        }
    }

    /** The database the options open has the deadline: a write held longer is answered DeadlineExceeded at it. */
    @Test
    void theDeadlineReachesTheDatabase(@TempDir Path dir) throws Exception {
        try (Db db = ServerOptions.of("--data", dir.toString(), "--db-deadline", "300").database().open()) {
            CountDownLatch release = new CountDownLatch(1);
            QueryFuture<Object> held = db.write(txn -> {
                release.await(30, SECONDS);
                return null;
            });
            try {
                ExecutionException e = assertThrows(ExecutionException.class, () -> held.get(3_300, MILLISECONDS));
                assertEquals(Duration.ofMillis(300), assertInstanceOf(DbException.DeadlineExceeded.class, e.getCause()).deadline);
            } finally {
                release.countDown();
            }
        }
    }
}

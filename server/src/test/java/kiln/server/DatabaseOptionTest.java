package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/** --db: a PostgreSQL URL checked when the command line is read, before anything connects. */
class DatabaseOptionTest {
    @Test
    void aPostgresqlUrlIsTakenAndLmdbIsTheDefault() {
        assertEquals("postgresql://kiln@127.0.0.1:5432/kiln?readers=4",
            ServerOptions.of("--db", "postgresql://kiln@127.0.0.1:5432/kiln?readers=4").db);
        assertEquals(null, ServerOptions.of().db, "LMDB in --data unless --db is given");
    }

    @Test
    void aBadUrlIsAUsageErrorNamingWhatIsWrong() {
        String notPostgres = assertThrows(CommandLine.ParameterException.class, () -> ServerOptions.of("--db", "mysql://h/d")).getMessage();
        assertTrue(notPostgres.contains("--db must be a PostgreSQL URL"), notPostgres);
        String readers = assertThrows(CommandLine.ParameterException.class,
            () -> ServerOptions.of("--db", "postgresql://h/d?readers=0")).getMessage();
        assertTrue(readers.contains("readers must be 1..1000, got '0'"), readers);
        String backup = assertThrows(CommandLine.ParameterException.class,
            () -> ServerOptions.of("--db", "postgresql://h/d", "--backup", "/tmp/x")).getMessage();
        assertTrue(backup.contains("pg_basebackup"), backup);
    }
}

package kiln.db.postgresql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The URLs --db takes: libpq's form turned into PgJDBC's, passwords never shown, table names PostgreSQL can hold. */
class UrlTest {
    @Test
    void libpqUrlsBecomeJdbcUrlsWithUserAndPasswordAsParameters() {
        assertEquals("jdbc:postgresql://127.0.0.1:5432/kiln?user=kiln",
            PostgresEngine.jdbcUrl("postgresql://kiln@127.0.0.1:5432/kiln"));
        assertEquals("jdbc:postgresql://db.example.com/app?sslmode=require&user=me&password=p%40ss%3Aword",
            PostgresEngine.jdbcUrl("postgres://me:p%40ss%3Aword@db.example.com/app?sslmode=require"));
        assertEquals("jdbc:postgresql://127.0.0.1:55432,127.0.0.1:55433/kiln?targetServerType=primary&user=kiln",
            PostgresEngine.jdbcUrl("postgresql://kiln@127.0.0.1:55432,127.0.0.1:55433/kiln?targetServerType=primary"),
            "several hosts, as libpq and PgJDBC both take them");
        assertEquals("jdbc:postgresql://h/d?user=u", PostgresEngine.jdbcUrl("jdbc:postgresql://h/d?user=u"), "a JDBC URL as it is");
        assertThrows(IllegalArgumentException.class, () -> PostgresEngine.jdbcUrl("mysql://h/d"));
        assertTrue(PostgresEngine.isUrl("postgresql://h/d") && PostgresEngine.isUrl("jdbc:postgresql://h/d"));
        assertFalse(PostgresEngine.isUrl("data"));
    }

    @Test
    void passwordsAreRedacted() {
        assertEquals("jdbc:postgresql://h/d?user=u&password=***", kiln.db.KvEngines.redact("jdbc:postgresql://h/d?user=u&password=secret"));
        assertEquals("postgresql://u:***@h/d", kiln.db.KvEngines.redact("postgresql://u:secret@h/d"));
    }

    @Test
    void aSpaceIsItsTableUnlessPostgresqlCannotHoldTheName() {
        assertEquals("world", PostgresEngine.relationName("world"));
        assertEquals("kiln.changes.world", PostgresEngine.relationName("kiln.changes.world"));
        String longName = "a".repeat(100);
        String rel = PostgresEngine.relationName(longName);
        assertTrue(rel.getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= 63 && rel.startsWith("aaaa") && rel.contains("#"), rel);
        assertFalse(rel.equals(PostgresEngine.relationName("a".repeat(101))), "distinct names, distinct tables");
        assertFalse(PostgresEngine.REGISTRY.equals(PostgresEngine.relationName(PostgresEngine.REGISTRY)));
        assertEquals("\"we\"\"ird\"", PostgresEngine.quote("we\"ird"));
    }
}

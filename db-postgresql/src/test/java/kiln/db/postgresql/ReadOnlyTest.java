package kiln.db.postgresql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.KvEngine;
import kiln.db.KvEngines;
import kiln.db.KvTxn;
import kiln.db.Table;

/**
 * A tool's view of a PostgreSQL database that servers use: opened read-only it creates nothing and
 * writes nothing, and {@link KvEngine#otherClients} names the sessions that are not its own.
 */
class ReadOnlyTest {
    @TempDir
    Path dir;

    private String url() {
        return TestPostgres.url() + "&currentSchema=" + TestPostgres.schema(dir);
    }

    private static boolean schemaExists(String schema) throws SQLException {
        try (Connection c = DriverManager.getConnection(TestPostgres.url()); Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema + "'")) {
            r.next();
            return r.getInt(1) == 1;
        }
    }

    @Test
    void aSchemaWithoutKilnsTablesIsRefusedAndNotCreated() throws SQLException {
        DbException e = assertThrows(DbException.class, () -> KvEngines.openReadOnly(url()));
        assertTrue(e.getMessage().contains("no kiln database"), e.getMessage());
        assertFalse(schemaExists(TestPostgres.schema(dir)));
    }

    @Test
    void itReadsWhatAServerWroteAndRefusesToWrite() {
        try (Db db = Db.open(url())) {
            Table<Integer, String> t = db.table("t", Codec.INT, Codec.STRING);
            db.write(txn -> {
                t.put(txn, 1, "one");
                return null;
            }).join();
            try (KvEngine ro = KvEngines.openReadOnly(url())) {
                try (KvTxn txn = ro.beginRead()) {
                    assertTrue(ro.spaceNames(txn).contains("t"));
                    ByteBuffer v = txn.get(ro.space(txn, "t", false), ByteBuffer.allocate(4).putInt(1 ^ Integer.MIN_VALUE).flip());
                    assertEquals("one", java.nio.charset.StandardCharsets.UTF_8.decode(v).toString());
                }
                assertThrows(IllegalStateException.class, ro::beginWrite);
            }
        }
    }

    @Test
    void otherClientsAreTheSessionsNotNamedAsItsOwn() {
        try (Db server = Db.open(url() + "&ApplicationName=kiln-a");
             KvEngine tool = KvEngines.openReadOnly(url() + "&ApplicationName=kiln-db-test")) {
            server.read(txn -> null).join();  // the server's sessions are made
            List<String> others = tool.otherClients();
            assertTrue(others.stream().anyMatch(s -> s.contains("('kiln-a')")), others.toString());
            assertFalse(others.stream().anyMatch(s -> s.contains("kiln-db-test")), others.toString());
        }
    }
}

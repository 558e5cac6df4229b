package kiln.db.postgresql;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;

/**
 * Where kiln's tables live in PostgreSQL: in a schema of their own ({@code kiln}) unless the URL
 * names one, every statement naming it, so a kiln table may be called as PostgreSQL's catalogs are;
 * and a database where an earlier kiln made them in {@code public} keeps being read there.
 */
class SchemaTest {
    @TempDir
    Path dir;
    /** The databases this test made, dropped after it. */
    private final List<String> databases = new ArrayList<>();

    @AfterEach
    void dropDatabases() throws SQLException {
        try (Connection c = DriverManager.getConnection(TestPostgres.url()); Statement s = c.createStatement()) {
            for (String d : databases) s.execute("DROP DATABASE IF EXISTS " + d + " WITH (FORCE)");
        }
    }

    /** @return the JDBC URL, without {@code currentSchema}, of a database made afresh for this test */
    private String freshDatabase(String suffix) throws SQLException {
        String name = TestPostgres.schema(dir) + "_" + suffix;
        try (Connection c = DriverManager.getConnection(TestPostgres.url()); Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            s.execute("CREATE DATABASE " + name);
        }
        databases.add(name);
        return "jdbc:postgresql://127.0.0.1:" + TestPostgres.port() + "/" + name + "?user=kiln";
    }

    private static List<String> tablesIn(String url, String schema) throws SQLException {
        List<String> names = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT tablename FROM pg_tables WHERE schemaname = '" + schema + "' ORDER BY tablename")) {
            while (r.next()) names.add(r.getString(1));
        }
        return names;
    }

    @Test
    void tablesNamedAsPostgresqlsCatalogsHoldTheirOwnRows() {
        try (Db db = Db.builder(TestPostgres.engine(dir)).open()) {
            for (String name : List.of("pg_type", "pg_class", "pg_roles", "pg_namespace")) {
                Table<Integer, String> t = db.table(name, Codec.INT, Codec.STRING);
                db.write(txn -> { t.put(txn, 1, "one in " + name); t.put(txn, 2, "two"); return null; }).join();
                assertEquals("one in " + name, db.read(txn -> t.get(txn, 1)).join());
                assertEquals(2L, db.read(t::count).join(), name);
            }
        }
    }

    @Test
    void withoutCurrentSchemaKilnsTablesLiveInASchemaOfTheirOwn() throws SQLException {
        String url = freshDatabase("own");
        try (Db db = Db.builder(PostgresEngine.open(url)).open()) {
            Table<Integer, String> t = db.table("world", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 1, "hello"); return null; }).join();
        }
        assertEquals(List.of(), tablesIn(url, "public"), "nothing of kiln's in public");
        assertEquals(List.of("kiln.meta", "kiln_spaces", "world"), tablesIn(url, PostgresEngine.DEFAULT_SCHEMA));
        try (Db db = Db.builder(PostgresEngine.open(url)).open()) {
            Table<Integer, String> t = db.table("world", Codec.INT, Codec.STRING);
            assertEquals("hello", db.read(txn -> t.get(txn, 1)).join(), "found again on the next start");
        }
    }

    @Test
    void tablesAnEarlierKilnMadeInPublicAreFoundThere() throws SQLException {
        String url = freshDatabase("public");
        try (Db db = Db.builder(PostgresEngine.open(url + "&currentSchema=public")).open()) {
            Table<Integer, String> t = db.table("world", Codec.INT, Codec.STRING);  // where earlier versions put it
            db.write(txn -> { t.put(txn, 1, "kept"); return null; }).join();
        }
        try (Db db = Db.builder(PostgresEngine.open(url)).open()) {
            Table<Integer, String> t = db.table("world", Codec.INT, Codec.STRING);
            assertEquals("kept", db.read(txn -> t.get(txn, 1)).join());
        }
        assertEquals(List.of(), tablesIn(url, PostgresEngine.DEFAULT_SCHEMA), "no second, empty set of tables");
    }
}

package kiln.db;

import java.nio.file.Path;

/**
 * How the layers' tests open a database: on LMDB; or, when the system property
 * {@code kiln.test.engine} is {@code memory} (the {@code memory-engine} run of db/pom.xml), on
 * {@link MemoryEngine}; or, when it is {@code postgresql} (kiln-db-postgresql's run of these tests),
 * on PostgreSQL through {@code kiln.db.postgresql.TestPostgres}, a schema per directory — the same
 * tests over another engine.
 */
final class Engines {
    private Engines() {
    }

    private static String name() {
        return System.getProperty("kiln.test.engine", "lmdb");
    }

    static boolean memory() {
        return name().equals("memory");
    }

    /** @return true on LMDB, the only engine with a map, pages and files */
    static boolean lmdb() {
        return name().equals("lmdb");
    }

    static Db.Builder builder(Path dir) {
        Db.Builder b = Db.builder(dir);
        return switch (name()) {
            case "lmdb" -> b;
            case "memory" -> b.engine(MemoryEngine.at(dir));
            case "postgresql" -> b.engine(postgres(dir));
            default -> throw new IllegalArgumentException("kiln.test.engine: lmdb, memory or postgresql, got " + name());
        };
    }

    /** @return a PostgreSQL engine on the schema of {@code dir}, from kiln-db-postgresql's test classes (found by name: it depends on this module) */
    private static KvEngine postgres(Path dir) {
        try {
            return (KvEngine) Class.forName("kiln.db.postgresql.TestPostgres").getMethod("engine", Path.class).invoke(null, dir);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("kiln.test.engine=postgresql runs in kiln-db-postgresql's tests only", e);
        }
    }

    static Db open(Path dir) {
        return builder(dir).open();
    }
}

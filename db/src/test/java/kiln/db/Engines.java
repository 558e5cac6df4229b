package kiln.db;

import java.nio.file.Path;

/**
 * How the layers' tests open a database: by URL ({@link KvEngines}), on the engine the system
 * property {@code kiln.test.engine} names — {@code memory} ({@link MemoryEngine}, this module's
 * runs), {@code lmdb} (kiln-db-lmdb's run of these tests), or {@code postgresql} (kiln-db-postgresql's:
 * a schema per directory on its test server) — the same tests over every engine.
 */
final class Engines {
    private Engines() {
    }

    private static String name() {
        return System.getProperty("kiln.test.engine", "memory");
    }

    static boolean memory() {
        return name().equals("memory");
    }

    /** @return true on LMDB, the only engine with a map, pages and files */
    static boolean lmdb() {
        return name().equals("lmdb");
    }

    /** @return the URL of the database in {@code dir} on the engine under test */
    static String url(Path dir) {
        return switch (name()) {
            case "lmdb" -> "lmdb:" + dir;
            case "memory" -> "memory:" + dir;
            case "postgresql" -> "postgresql-test:" + dir;
            default -> throw new IllegalArgumentException("kiln.test.engine: lmdb, memory or postgresql, got " + name());
        };
    }

    static Db.Builder builder(Path dir) {
        return Db.builder(url(dir));
    }

    static Db open(Path dir) {
        return builder(dir).open();
    }
}

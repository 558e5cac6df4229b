package kiln.db;

import java.nio.file.Path;

/**
 * How the layers' tests open a database: on LMDB, or, when the system property
 * {@code kiln.test.engine} is {@code memory} (the {@code memory-engine} run of db/pom.xml), on
 * {@link MemoryEngine} — the same tests over another engine.
 */
final class Engines {
    private Engines() {
    }

    static boolean memory() {
        return "memory".equals(System.getProperty("kiln.test.engine"));
    }

    static Db.Builder builder(Path dir) {
        Db.Builder b = Db.builder(dir);
        return memory() ? b.engine(MemoryEngine.at(dir)) : b;
    }

    static Db open(Path dir) {
        return builder(dir).open();
    }
}

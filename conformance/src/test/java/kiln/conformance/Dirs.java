package kiln.conformance;

import java.nio.file.Path;

/** Where the suite finds the server jars and writes its logs and data directories (set by the pom). */
final class Dirs {
    private Dirs() {
    }

    /** @return the repository root, {@code -Dkiln.repo} (default: the parent of the working directory) */
    static Path repo() {
        return Path.of(System.getProperty("kiln.repo", "..")).toAbsolutePath().normalize();
    }

    /** @return this module's build directory, {@code -Dkiln.target} (default: ./target) */
    static Path target() {
        return Path.of(System.getProperty("kiln.target", "target")).toAbsolutePath().normalize();
    }

    /** @return the directory holding every server's stdout/stderr log */
    static Path logs() {
        return target().resolve("server-logs");
    }

    /** @return the parent of the servers' fresh LMDB data directories */
    static Path data() {
        return target().resolve("server-data");
    }
}

package kiln.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Data directories for the benchmarks, under the directory named by the system property
 * {@code kiln.bench.dir} (default {@code target/bench-data}). It must be on the disk whose fsync the
 * write figures are about, not on tmpfs.
 */
final class BenchDirs {
    static final String PROPERTY = "kiln.bench.dir";

    private BenchDirs() {
    }

    static Path root() {
        return Path.of(System.getProperty(PROPERTY, "target/bench-data")).toAbsolutePath();
    }

    /** @return an empty directory {@code root()/name-<pid>}, created */
    static Path fresh(String name) {
        Path dir = root().resolve(name + "-" + ProcessHandle.current().pid());
        delete(dir);
        try {
            return Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void delete(Path dir) {
        if (!Files.exists(dir)) return;
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) Files.delete(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

package kiln.db.lmdb;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;

import org.lmdbjava.Meta;

/**
 * Loads the LMDB library that lmdbjava bundles without leaving a copy of it behind.
 *
 * <p>At its first use lmdbjava copies its {@code liblmdb} (361 KB on linux-x86_64) to
 * {@code lmdbjava-native-library-*.so} in {@code java.io.tmpdir} and loads it from there, and it
 * deletes that copy only through {@link java.io.File#deleteOnExit}: when the JVM exits by running
 * its shutdown hooks to their end. A kiln server never exits that way (its stop ends with
 * {@code Runtime.halt}, for its exit status; an OutOfMemoryError exit, a crash and {@code kill -9}
 * run no hooks at all), so every start of a server left one copy in {@code /tmp}, which on a
 * tmpfs {@code /tmp} is memory: 1,689 copies, 610 MB, after one day of this project's tests.
 *
 * <p>So the copy goes to a directory of its own, and that directory is deleted as soon as the
 * library is loaded: the library's mapping outlives its file (Linux, macOS). Only a process killed
 * within those few milliseconds of its start leaves it. Nothing is changed when
 * {@code lmdbjava.native.lib} (a system {@code liblmdb}) or {@code lmdbjava.extract.dir} is set.
 */
final class LmdbLibrary {
    private static final Logger LOG = Logger.getLogger(LmdbLibrary.class.getName());
    /** lmdbjava's system properties: {@code org.lmdbjava.TargetName.LMDB_NATIVE_LIB_PROP}, {@code Library.LMDB_EXTRACT_DIR_PROP}. */
    private static final String NATIVE_LIB = "lmdbjava.native.lib";
    private static final String EXTRACT_DIR = "lmdbjava.extract.dir";
    private static boolean loaded;

    private LmdbLibrary() {
    }

    /**
     * Loads the library, once per JVM; before any use of lmdbjava's {@code Env}.
     *
     * @throws ExceptionInInitializerError or {@link NoClassDefFoundError} when lmdbjava cannot load
     *         it, as lmdbjava's own first use would
     */
    static synchronized void load() {
        if (loaded) return;
        loaded = true;
        if (System.getProperty(NATIVE_LIB) != null || System.getProperty(EXTRACT_DIR) != null) return;  // the user's choice
        Path dir;
        try {
            dir = Files.createTempDirectory("kiln-lmdb-");
        } catch (IOException | SecurityException e) {
            LOG.log(Level.FINE, "no directory of its own for lmdbjava's copy of liblmdb; lmdbjava puts it in java.io.tmpdir", e);
            return;
        }
        System.setProperty(EXTRACT_DIR, dir.toString());
        try {
            Meta.version();  // lmdbjava's first call into the library: it copies and loads it now
        } finally {
            System.clearProperty(EXTRACT_DIR);
            deleteQuietly(dir);
        }
    }

    private static void deleteQuietly(Path dir) {
        try {
            try (Stream<Path> copies = Files.list(dir)) {
                for (Path copy : (Iterable<Path>) copies::iterator) Files.delete(copy);
            }
            Files.delete(dir);
        } catch (IOException e) {
            LOG.log(Level.FINE, "cannot delete lmdbjava's copy of liblmdb in " + dir + "; it stays there", e);
        }
    }
}

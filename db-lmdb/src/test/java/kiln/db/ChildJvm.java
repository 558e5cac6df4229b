package kiln.db;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The command that runs a test's child process: this JVM, this class path, lmdbjava's flags, 128 MB of heap. */
final class ChildJvm {
    private ChildJvm() {
    }

    /** @return {@code java ... main args...} */
    static List<String> command(Class<?> main, String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }
}

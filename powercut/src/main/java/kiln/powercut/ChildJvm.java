package kiln.powercut;

import java.nio.file.Path;
import java.util.List;

/** The JVM a cut's load and its check run in: a child process, killed with the cut or ended by it. */
final class ChildJvm {
    private ChildJvm() {
    }

    /** @return {@code java ... main}: this JVM, this class path, lmdbjava's flags, a small heap, no crash files */
    static List<String> command(Class<?> main) {
        return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m", "-XX:+UseSerialGC",
            "-XX:ErrorFile=/dev/null", "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), main.getName());
    }
}

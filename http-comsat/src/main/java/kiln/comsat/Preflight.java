package kiln.comsat;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;

/**
 * What the JVM must provide before Quasar fibers can run, checked at start-up so that a wrong JVM
 * fails with one clear line instead of hanging fibers or Quasar's "Oops. Forgot to instrument a
 * method" (see ../shared/FACTS.md and the README, "Comsat").
 *
 * <p>Nothing here touches a Quasar class except through reflection, so the checks also work when
 * Quasar is missing or broken.
 */
final class Preflight {
    /** Where Debian and Ubuntu install JDKs (the Makefile looks there too). */
    private static final Path JVM_DIR = Path.of("/usr/lib/jvm");

    private Preflight() {
    }

    /**
     * Quasar 0.8.0 needs {@code Thread.target}, which JDK 19 removed (virtual threads reworked
     * Thread), and this build targets 17: so 17 and 18 run it; it is tested on 17.
     */
    static boolean supportedJdk(int feature) {
        return feature == 17 || feature == 18;
    }

    /** @return why this JVM cannot run the Comsat front end, or null when it can */
    static String problem() {
        int feature = Runtime.version().feature();
        if (!supportedJdk(feature)) {
            return "kiln-comsat runs only on JDK 17: Quasar 0.8.0 cannot run on JDK " + feature
                + (feature >= 19 ? " (JDK 19 removed Thread.target, which Quasar's fibers need)" : "")
                + ". " + jdk17Hint();
        }
        if (!agentActive()) {
            return "Quasar's instrumentation agent is not running. Start the server with"
                + " 'java -jar kiln-comsat.jar' (its manifest starts the agent), or pass"
                + " -javaagent:<path to quasar-agent/target/kiln-quasar-agent.jar> (the repaired agent)";
        }
        if (!Object.class.getModule().isOpen("java.lang", Preflight.class.getModule())) {
            return "Quasar needs java.lang opened to it: add --add-opens java.base/java.lang=ALL-UNNAMED"
                + " (java -jar kiln-comsat.jar does this through its manifest)";
        }
        return null;
    }

    /** @return Quasar's {@code JavaAgent.isActive()}: true once its transformer is installed */
    private static boolean agentActive() {
        try {
            Class<?> agent = Class.forName("co.paralleluniverse.fibers.instrument.JavaAgent");
            return (Boolean) agent.getMethod("isActive").invoke(null);
        } catch (ReflectiveOperationException | LinkageError e) {
            return false;
        }
    }

    /** @return a sentence naming a JDK 17 on this machine to use, or saying how to get one */
    static String jdk17Hint() {
        List<Path> found = List.copyOf(jdk17s(JVM_DIR));
        if (found.isEmpty()) {
            return "Install a JDK 17 (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless) and run the server with its java.";
        }
        return "Use " + found.get(0).resolve("bin").resolve("java") + " -jar kiln-comsat.jar ... (or make demo SERVER=comsat, which picks it).";
    }

    /** @return the JDK 17 installations directly under {@code dir}, by real path, sorted */
    static TreeSet<Path> jdk17s(Path dir) {
        TreeSet<Path> found = new TreeSet<>();
        if (!Files.isDirectory(dir)) return found;
        try (DirectoryStream<Path> jdks = Files.newDirectoryStream(dir)) {
            for (Path jdk : jdks) {
                Path release = jdk.resolve("release");
                if (!Files.isExecutable(jdk.resolve("bin").resolve("java")) || !Files.isRegularFile(release)) continue;
                for (String line : Files.readAllLines(release)) {
                    if (line.startsWith("JAVA_VERSION=\"17")) found.add(jdk.toRealPath());
                }
            }
        } catch (IOException | RuntimeException e) {
            // An unreadable directory only means no hint: the caller's message stands without it.
        }
        return found;
    }
}

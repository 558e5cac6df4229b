package kiln.conformance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.params.provider.Arguments;

/**
 * A front end under test, as one line of the repository's {@code frontends.conf} describes it (the
 * registry the Makefile and {@code ab-sweep.sh} read too): its name, module, runnable jar, the
 * {@link Deviation}s its server library forces on it, the class counted by the leak check, and its
 * extra arguments. Adding a line there (and building its module) puts a front end under every test.
 *
 * <p>{@code -Dkiln.servers=kilim,jetty-async} (names, comma-separated; default {@code all}) selects a
 * subset while developing.
 */
final class FrontEnd {
    /** Every front end in the registry, in its order; read once. */
    private static final List<FrontEnd> ALL = load(Dirs.repo().resolve("frontends.conf"));

    /** Name used in test names, in {@code -Dkiln.servers} and in log file names. */
    final String id;
    /** Module directory under the repository root. */
    final String module;
    /** Runnable jar file name, in {@code <module>/target/}. */
    final String jar;
    /** The Java feature versions it runs on, as written in the registry: {@code 17}, {@code 17+}, {@code 21+}. */
    final String jdk;
    /** The server's class with one live instance per open connection, idle or busy. */
    final String connectionClass;
    /** Where this front end cannot follow the contract; the tests check the weaker property instead. */
    final Set<Deviation> deviations;
    /** Arguments after the common {@code --port --bind --data}. */
    final List<String> extraArgs;

    private FrontEnd(String id, String module, String jar, String jdk, String connectionClass, Set<Deviation> deviations,
                     List<String> extraArgs) {
        this.id = id;
        this.module = module;
        this.jar = jar;
        this.jdk = jdk;
        this.connectionClass = connectionClass;
        this.deviations = Collections.unmodifiableSet(deviations);
        this.extraArgs = List.copyOf(extraArgs);
    }

    /**
     * Parses the registry: one front end per line, {@code name module jar jdk connection deviations
     * args...}, {@code #} comments and blank lines ignored.
     *
     * @throws IllegalStateException naming the line when one is malformed or names an unknown deviation
     */
    static List<FrontEnd> load(Path registry) {
        List<String> lines;
        try {
            lines = Files.readAllLines(registry);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the front-end registry " + registry, e);
        }
        List<FrontEnd> all = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split("\\s+");
            if (f.length < 6) {
                throw new IllegalStateException(registry + ":" + (i + 1) + ": want name module jar jdk connection deviations [args], got: " + line);
            }
            Set<Deviation> deviations = EnumSet.noneOf(Deviation.class);
            if (!f[5].equals("-")) {
                for (String d : f[5].split(",")) {
                    try {
                        deviations.add(Deviation.valueOf(d));
                    } catch (IllegalArgumentException e) {
                        throw new IllegalStateException(registry + ":" + (i + 1) + ": unknown deviation '" + d + "'; known: "
                            + Arrays.toString(Deviation.values()), e);
                    }
                }
            }
            all.add(new FrontEnd(f[0], f[1], f[2], f[3], f[4], deviations, Arrays.asList(f).subList(6, f.length)));
        }
        return List.copyOf(all);
    }

    /** @return true if this front end has deviation {@code d} */
    boolean has(Deviation d) {
        return deviations.contains(d);
    }

    /** @return the program name the jar prints in its ready line: the jar name without ".jar" (kiln-jetty) */
    String program() {
        return jar.substring(0, jar.length() - ".jar".length());
    }

    /** @return the jar's path, from {@code -Dkiln.repo} (the repository root) */
    Path jarPath() {
        return Dirs.repo().resolve(module).resolve("target").resolve(jar);
    }

    /**
     * @return the {@code java} that runs this front end: the suite's own when its feature version is
     *         in {@link #jdk}, else the one {@code scripts/find-java.sh} finds (as {@code make demo} does)
     * @throws AssertionError with the script's advice when no JDK on this machine fits
     */
    String javaBinary() {
        String own = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        int feature = Runtime.version().feature();
        int min = Integer.parseInt(jdk.replace("+", ""));
        if (feature == min || (jdk.endsWith("+") && feature > min)) return own;
        Command found;
        try {
            found = Command.run(30, List.of(Dirs.repo().resolve("scripts/find-java.sh").toString(), jdk));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while looking for a JDK " + jdk, e);
        }
        if (found.exitCode != 0) throw new AssertionError("front end '" + id + "' needs JDK " + jdk + ": " + found.output.strip());
        return found.output.strip();
    }

    /**
     * @param java a {@code java} binary, as {@link #javaBinary} returns
     * @return its feature version (17, 21, 25...), from its JDK's {@code release} file
     */
    static int featureOf(String java) {
        Path release;
        try {
            release = Path.of(java).toRealPath().getParent().getParent().resolve("release");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot resolve " + java, e);
        }
        try {
            for (String line : Files.readAllLines(release)) {
                if (line.startsWith("JAVA_VERSION=\"")) return Integer.parseInt(line.replaceAll("JAVA_VERSION=\"(\\d+).*", "$1"));
            }
        } catch (IOException | NumberFormatException e) {
            throw new AssertionError("cannot read the version of " + java + " from " + release, e);
        }
        throw new AssertionError("no JAVA_VERSION in " + release);
    }

    /** @return true if the jar has been built */
    boolean built() {
        return Files.isRegularFile(jarPath());
    }

    @Override
    public String toString() {
        return id;
    }

    /**
     * The servers under test, from {@code -Dkiln.servers}; a JUnit {@code @MethodSource}.
     *
     * @throws IllegalArgumentException on an unknown name, listing the known ones
     */
    static List<FrontEnd> underTest() {
        String wanted = System.getProperty("kiln.servers", "all").trim();
        if (wanted.isEmpty() || wanted.equals("all")) return ALL;
        List<FrontEnd> chosen = new ArrayList<>();
        for (String name : wanted.split(",")) {
            FrontEnd fe = byId(name.trim());
            if (!chosen.contains(fe)) chosen.add(fe);
        }
        return chosen;
    }

    /**
     * A JUnit {@code @MethodSource} helper: every server under test combined with every case.
     *
     * @param cases one row of further arguments per case
     * @return (front end, case arguments...) for each pair, front end first so test names start with it
     */
    static Stream<Arguments> cross(Object[][] cases) {
        List<Arguments> all = new ArrayList<>();
        for (FrontEnd fe : underTest()) {
            for (Object[] c : cases) {
                Object[] args = new Object[c.length + 1];
                args[0] = fe;
                System.arraycopy(c, 0, args, 1, c.length);
                all.add(Arguments.of(args));
            }
        }
        return all.stream();
    }

    static FrontEnd byId(String id) {
        for (FrontEnd fe : ALL) {
            if (fe.id.equals(id)) return fe;
        }
        throw new IllegalArgumentException("-Dkiln.servers names an unknown front end '" + id + "'; known: all, "
            + ALL.stream().map(fe -> fe.id).collect(Collectors.joining(", ")));
    }
}

package kiln.conformance;

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
 * Every front end the suite knows, the one list of servers under test, each with the
 * {@link Deviation}s its server library forces on it (the README's front-end table lists them).
 *
 * <p>To add a front end: add a constant below with its test name, module directory, runnable jar
 * (in {@code <module>/target/}), its deviations and any extra command-line arguments, for example
 * {@code COMSAT("comsat", "http-comsat", "kiln-comsat.jar", none())}; then add
 * the module to conformance/pom.xml as a {@code type pom} test dependency (see the comment there) so
 * the reactor builds its jar first. Every test of the suite then runs against it.
 *
 * <p>{@code -Dkiln.servers=kilim,jetty-async} (names, comma-separated; default {@code all}) selects a
 * subset while developing.
 */
enum FrontEnd {
    KILIM("kilim", "http-kilim", "kiln-kilim.jar", "kiln.kilim.HttpConnection", none()),
    JETTY_ASYNC("jetty-async", "http-jetty-async", "kiln-jetty.jar", "org.eclipse.jetty.server.internal.HttpConnection", jetty(), "--mode", "async"),
    JETTY_BLOCKING("jetty-blocking", "http-jetty-async", "kiln-jetty.jar", "org.eclipse.jetty.server.internal.HttpConnection", jetty(), "--mode", "blocking"),
    UNDERTOW_ASYNC("undertow-async", "http-undertow-async", "kiln-undertow.jar", "io.undertow.server.protocol.http.HttpServerConnection", undertow(), "--mode", "async"),
    UNDERTOW_BLOCKING("undertow-blocking", "http-undertow-async", "kiln-undertow.jar", "io.undertow.server.protocol.http.HttpServerConnection", undertow(),
        "--mode", "blocking"),
    /** JDK 17 only (Quasar): the suite's JVM must be a 17, as CI's is. The jar starts Quasar's agent itself. */
    COMSAT("comsat", "http-comsat", "kiln-comsat.jar", "org.eclipse.jetty.server.HttpConnection", comsat());

    /** Name used in test names, in {@code -Dkiln.servers} and in log file names. */
    final String id;
    /** Module directory under the repository root. */
    final String module;
    /** Runnable jar file name, in {@code <module>/target/}. */
    final String jar;
    /** Where this front end cannot follow the contract; the tests check the weaker property instead. */
    final Set<Deviation> deviations;
    /** Arguments after the common {@code --port --bind --data}. */
    final List<String> extraArgs;
    /** The server's class with one live instance per open connection (a Kilim connection is its fiber). */
    final String connectionClass;

    FrontEnd(String id, String module, String jar, String connectionClass, Set<Deviation> deviations, String... extraArgs) {
        this.id = id;
        this.module = module;
        this.jar = jar;
        this.connectionClass = connectionClass;
        this.deviations = Collections.unmodifiableSet(deviations);
        this.extraArgs = Collections.unmodifiableList(Arrays.asList(extraArgs));
    }

    /** @return true if this front end has deviation {@code d} */
    boolean has(Deviation d) {
        return deviations.contains(d);
    }

    private static Set<Deviation> none() {
        return EnumSet.noneOf(Deviation.class);
    }

    /** Jetty 12.1, both modes: the parser, not the servlet, answers a malformed version; content and the cap. */
    private static Set<Deviation> jetty() {
        return EnumSet.of(Deviation.MALFORMED_VERSION_IS_505, Deviation.CHUNKED_CONTENT_REFUSED_UNREAD,
            Deviation.CONNECTION_CAP_WAITS_IN_BACKLOG);
    }

    /** Undertow 2.4, both modes: header order, what its parser answers or serves before the handler, timeouts, the cap. */
    private static Set<Deviation> undertow() {
        return EnumSet.of(Deviation.HEADER_ORDER_HASHED, Deviation.PARSE_ERRORS_BODILESS_400,
            Deviation.UNKNOWN_VERSION_SERVED_AS_HTTP_1_1, Deviation.CHUNKED_CONTENT_REFUSED_UNREAD,
            Deviation.HEADER_TIMEOUT_CLOSES_SILENTLY, Deviation.CONNECTION_CAP_WAITS_IN_BACKLOG);
    }

    /** Comsat on Jetty 9.4: content and the cap, as Jetty 12. */
    private static Set<Deviation> comsat() {
        return EnumSet.of(Deviation.CHUNKED_CONTENT_REFUSED_UNREAD, Deviation.CONNECTION_CAP_WAITS_IN_BACKLOG);
    }

    /** @return the program name the jar prints in its ready line: the jar name without ".jar" (kiln-jetty) */
    String program() {
        return jar.substring(0, jar.length() - ".jar".length());
    }

    /** @return the jar's path, from {@code -Dkiln.repo} (the repository root) */
    Path jarPath() {
        return Dirs.repo().resolve(module).resolve("target").resolve(jar);
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
        if (wanted.isEmpty() || wanted.equals("all")) return List.of(values());
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

    private static FrontEnd byId(String id) {
        for (FrontEnd fe : values()) {
            if (fe.id.equals(id)) return fe;
        }
        throw new IllegalArgumentException("-Dkiln.servers names an unknown front end '" + id + "'; known: all, "
            + Arrays.stream(values()).map(fe -> fe.id).collect(Collectors.joining(", ")));
    }
}

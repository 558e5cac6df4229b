package kiln.loom;

import java.util.function.Function;

import kiln.server.Launcher;
import kiln.server.ServerLimits;
import kiln.server.ServerOptions;
import kiln.server.VirtualThreads;
import kiln.db.Db;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * Your routes as a server process on JDK virtual threads (JDK 21+), with kiln's standard options:
 * {@link #serve}. On an older JDK it exits 1 with one line naming the JDK to use.
 * <pre>{@code
 * public static void main(String[] args) {
 *     LoomMain.serve("todo", args, db -> TodoApp.routes(db));
 * }
 * }</pre>
 * The demo's jar runs the demo's endpoints the same way ({@link LoomDemo}).
 */
@Command(name = "kiln-loom", mixinStandardHelpOptions = true, version = "kiln-loom 0.1.0",
    description = "kiln's HTTP server on JDK virtual threads (one per connection) over the kiln LMDB database. JDK 21+.%n"
        + "--threads sets the virtual threads' carrier threads (jdk.virtualThreadScheduler.parallelism).")
public final class LoomMain {
    /** Heap per open connection for the default cap, bytes: about 4.7 KB per idle connection measured (its virtual thread's stack), with room for a request (make bench-memory). */
    private static final int HEAP_PER_CONNECTION = 8192;
    /** Heap per open event stream, bytes: about 4.0 KB per subscriber measured at 19,500 (./ab-sweep.sh --subscribers 20000 --vps). */
    private static final int HEAP_PER_STREAM = 8192;
    /** The JDK's setting for the number of carrier threads of virtual threads; read once, at the first virtual thread. */
    static final String PARALLELISM = "jdk.virtualThreadScheduler.parallelism";

    @Mixin
    ServerOptions server;

    /**
     * Runs your routes as a server: parses the standard options ({@code --port --bind --data
     * --threads}, the limits, {@code --help}), opens the database, serves the router {@code routes}
     * builds over it, prints {@code NAME listening on http://ADDR:PORT/}, and stops cleanly on
     * SIGTERM or Ctrl-C. Returns once serving; a bad option exits 2, a start-up failure (a JDK
     * older than 21 among them) exits 1 with one line.
     *
     * @param name   the program's name, for its usage, log and ready lines
     * @param args   the command line
     * @param routes builds the router once the database is open (open tables and sequences here)
     */
    public static void serve(String name, String[] args, Function<Db, Router> routes) {
        serve(name, "Your routes on kiln's HTTP server on virtual threads (JDK 21+).", args, routes);
    }

    /**
     * As {@link #serve(String, String[], Function)}, with the app's own description and flags for
     * {@code --help}: each of {@code appOptions} is an object with picocli {@code @Option} fields,
     * set from {@code args} before {@code routes} runs (so the routes read them), e.g.
     * <pre>{@code
     * static final class Options {
     *     @Option(names = "--greeting", defaultValue = "Hello", description = "What /hello says (default: ${DEFAULT-VALUE}).")
     *     String greeting;
     * }
     * Options o = new Options();
     * LoomMain.serve("my-app", "Greets and counts.", args, db -> routes(db, o), o);
     * }</pre>
     *
     * @param description one line for {@code --help}: what the app is
     */
    public static void serve(String name, String description, String[] args, Function<Db, Router> routes, Object... appOptions) {
        LoomMain command = new LoomMain();
        ServerOptions options = ServerOptions.parseOrExit(command, name, description, args, appOptions);
        command.start(name, options, routes);
    }

    /** Serves the router {@code routes} builds, with these parsed options. */
    void start(String name, ServerOptions options, Function<Db, Router> routes) {
        VirtualThreads.requireOrExit(name);
        // Before the first virtual thread: the JDK reads it once. An explicit -D wins.
        if (System.getProperty(PARALLELISM) == null) System.setProperty(PARALLELISM, Integer.toString(options.threadsOrDefault()));
        Launcher.run(name, options, db -> {
            ServerLimits limits = options.limits(HEAP_PER_CONNECTION, HEAP_PER_STREAM);
            LoomServer server = new LoomServer(options.bind, options.port, options.applyTo(routes.apply(db), limits)).limits(limits);
            server.start();
            return server;
        });
    }
}

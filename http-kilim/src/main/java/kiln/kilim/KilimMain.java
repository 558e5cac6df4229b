package kiln.kilim;

import java.io.IOException;
import java.util.function.Function;

import kiln.db.Db;
import kiln.server.Launcher;
import kiln.server.ServerLimits;
import kiln.server.ServerOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Your routes as a server process on Kilim fibers, with kiln's standard options: {@link #serve}.
 * <pre>{@code
 * public static void main(String[] args) {
 *     KilimMain.serve("todo", args, db -> TodoApp.routes(db));
 * }
 * }</pre>
 * The demo's jar runs the demo's endpoints the same way ({@link KilimDemo}).
 */
@Command(name = "kiln-kilim", mixinStandardHelpOptions = true, version = "kiln-kilim 0.1.0",
    description = "The Kilim fiber HTTP server over the kiln LMDB database.")
public final class KilimMain {
    /** Heap per open connection for the default cap, bytes: 816 bytes per idle connection measured, with room for a request in progress (make bench-memory). */
    private static final int HEAP_PER_CONNECTION = 2048;
    /** Heap per open event stream, bytes: 1,178 bytes per subscriber measured at 19,500 (./ab-sweep.sh --subscribers 20000 --vps). */
    private static final int HEAP_PER_STREAM = 2048;

    @Mixin
    ServerOptions server;

    @Option(names = "--blocked-carrier-ms", paramLabel = "MS", defaultValue = "100",
        description = "Log, once per handler, a fiber that runs this long on its carrier thread without pausing"
            + " (a Thread.sleep, a blocking call, a long loop), with its stack and what to use instead; 0: off (default: ${DEFAULT-VALUE}).")
    long blockedCarrierMs;

    @Option(names = "--hand-off-ms", paramLabel = "MS", defaultValue = "20",
        description = "Hand a carrier whose thread one fiber has held this long (a blocking call, a long loop) to a new thread,"
            + " so that the selector and the carrier's other fibers go on; 0: never (default: ${DEFAULT-VALUE}).")
    long handOffMs;

    @Option(names = "--transport", paramLabel = "T", defaultValue = "AUTO",
        description = "How the selectors poll, read and write: AUTO (epoll where available, else NIO), EPOLL (Linux, through Netty's"
            + " native calls) or NIO (the JDK's; any platform) (default: ${DEFAULT-VALUE}).")
    KilimServer.Transport transport;

    @Option(names = "--unhealthy-after-ms", paramLabel = "MS", defaultValue = "5000",
        description = "/healthz answers 503, naming the handler, while one has held a thread this long; 0: never (default: ${DEFAULT-VALUE}).")
    long unhealthyAfterMs;

    /**
     * Runs your routes as a server: parses the standard options ({@code --port --bind --data
     * --threads}, the limits, {@code --help}), opens the database, serves the router {@code routes}
     * builds over it, prints {@code NAME listening on http://ADDR:PORT/}, and stops cleanly on
     * SIGTERM or Ctrl-C. Returns once serving; a bad option exits 2, a start-up failure exits 1 with
     * one line.
     *
     * @param name   the program's name, for its usage, log and ready lines
     * @param args   the command line
     * @param routes builds the router once the database is open (open tables and sequences here)
     */
    public static void serve(String name, String[] args, Function<Db, Router> routes) {
        serve(name, "Your routes on kiln's Kilim fiber HTTP server.", args, routes);
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
     * KilimMain.serve("my-app", "Greets and counts.", args, db -> routes(db, o), o);
     * }</pre>
     *
     * @param description one line for {@code --help}: what the app is
     */
    public static void serve(String name, String description, String[] args, Function<Db, Router> routes, Object... appOptions) {
        KilimMain command = new KilimMain();
        ServerOptions options = ServerOptions.parseOrExit(command, name, description, args, appOptions);
        command.start(name, options, routes);
    }

    /** Serves the router {@code routes} builds, with these parsed options (and the blocked-carrier checker's: {@link #blockedCarrierMs} ...). */
    void start(String name, ServerOptions options, Function<Db, Router> routes) {
        Launcher.run(name, options, db -> serve(options, db, routes));
    }

    /**
     * Starts the server over the open {@code db}, as {@link #start} does once it has opened it: the
     * router {@code routes} builds, the options' limits and middleware, the blocked-carrier checker's thresholds.
     * A test runs a jar's server through it, without the launcher's signals and exits.
     *
     * @throws IOException when the address cannot be bound
     */
    KilimServer serve(ServerOptions options, Db db, Function<Db, Router> routes) throws IOException {
        ServerLimits limits = options.limits(HEAP_PER_CONNECTION, HEAP_PER_STREAM);
        KilimServer server = new KilimServer(options.bind, options.port, options.threadsOrDefault(), options.applyTo(routes.apply(db), limits))
            .limits(limits)
            .blockedCarrierThreshold(blockedCarrierMs)
            .handOffThreshold(handOffMs)
            .unhealthyThreshold(unhealthyAfterMs)
            .transport(transport);
        server.start();
        return server;
    }
}

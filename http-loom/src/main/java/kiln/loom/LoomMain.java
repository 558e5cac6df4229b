package kiln.loom;

import java.util.function.Function;

import kiln.app.DemoDb;
import kiln.app.Launcher;
import kiln.app.ServerOptions;
import kiln.app.VirtualThreads;
import kiln.db.Db;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code java -jar kiln-loom.jar [--port N] [--bind ADDR] [--data DIR] [--threads N] ...} on JDK 21
 * or newer: opens (and on first start fills) the database, serves the endpoint registry with one
 * virtual thread per connection, and on SIGTERM or Ctrl-C stops accepting, finishes requests in
 * flight, commits queued writes and closes LMDB. On an older JDK it exits 1 with one line naming
 * the JDK to use.
 *
 * <p>{@link #serve} runs your own routes the same way, with the same options:
 * <pre>{@code
 * public static void main(String[] args) {
 *     LoomMain.serve("todo", args, db -> TodoApp.routes(db));
 * }
 * }</pre>
 */
@Command(name = "kiln-loom", mixinStandardHelpOptions = true, version = "kiln-loom 0.1.0",
    description = "kiln's HTTP server on JDK virtual threads (one per connection) over the kiln LMDB database. JDK 21+.%n"
        + "--threads sets the virtual threads' carrier threads (jdk.virtualThreadScheduler.parallelism).")
public final class LoomMain {
    /** Heap per open connection for the default cap, bytes: about 4.7 KB per idle connection measured (its virtual thread's stack), with room for a request (make bench-memory). */
    private static final int HEAP_PER_CONNECTION = 8192;
    private static final String NAME = "kiln-loom";
    /** The JDK's setting for the number of carrier threads of virtual threads; read once, at the first virtual thread. */
    static final String PARALLELISM = "jdk.virtualThreadScheduler.parallelism";

    @Mixin
    ServerOptions server;

    public static void main(String[] args) {
        LoomMain command = new LoomMain();
        ServerOptions options = ServerOptions.parseOrExit(command, args);
        command.start(NAME, options, db -> Router.withEndpoints(DemoDb.open(db), options.metrics(db)));
    }

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
        LoomMain command = new LoomMain();
        ServerOptions options = ServerOptions.parseOrExit(command, name, "Your routes on kiln's HTTP server on virtual threads (JDK 21+).", args);
        command.start(name, options, routes);
    }

    private void start(String name, ServerOptions options, Function<Db, Router> routes) {
        VirtualThreads.requireOrExit(name);
        // Before the first virtual thread: the JDK reads it once. An explicit -D wins.
        if (System.getProperty(PARALLELISM) == null) System.setProperty(PARALLELISM, Integer.toString(options.threadsOrDefault()));
        Launcher.run(name, options, db -> {
            LoomServer server = new LoomServer(options.bind, options.port, routes.apply(db))
                .idleTimeout(options.idleTimeoutMs)
                .headerTimeout(options.headerTimeoutMs)
                .maxConnections(options.maxConnectionsOrDefault(HEAP_PER_CONNECTION));
            server.start();
            return server;
        });
    }
}

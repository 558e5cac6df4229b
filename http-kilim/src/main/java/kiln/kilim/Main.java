package kiln.kilim;

import kiln.app.Launcher;
import kiln.app.ServerOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code java -jar kiln-kilim.jar [--port N] [--bind ADDR] [--data DIR] [--threads N]}: opens (and
 * on first start fills) the database, serves the demo endpoints, and on SIGTERM or Ctrl-C stops
 * accepting, finishes requests in flight, commits queued writes and closes LMDB.
 */
@Command(name = "kiln-kilim", mixinStandardHelpOptions = true, version = "kiln-kilim 0.1.0",
    description = "The Kilim fiber HTTP server over the kiln LMDB database.%n"
        + "Endpoints: / /plaintext /json /db /queries?queries=N /updates?queries=N /fortunes /hello?delay=MS")
public final class Main {
    private static final String NAME = "kiln-kilim";

    @Mixin
    ServerOptions server;

    @Option(names = "--idle-timeout", paramLabel = "MS", defaultValue = "60000",
        description = "Close a keep-alive connection idle this long, or stuck writing to a client that does not read (default: ${DEFAULT-VALUE}).")
    long idleTimeoutMs;

    @Option(names = "--header-timeout", paramLabel = "MS", defaultValue = "10000",
        description = "Answer 408 and close when a started request is not complete after this long (slowloris; default: ${DEFAULT-VALUE}).")
    long headerTimeoutMs;

    @Option(names = "--max-connections", paramLabel = "N",
        description = "Most connections open at once; beyond it new ones get 503 and are closed (default: the open-files limit minus 64).")
    Integer maxConnections;

    public static void main(String[] args) {
        Main cmd = new Main();
        ServerOptions options = ServerOptions.parseOrExit(cmd, args);
        if (cmd.idleTimeoutMs < 1 || cmd.headerTimeoutMs < 1 || (cmd.maxConnections != null && cmd.maxConnections < 1)) {
            System.err.println(NAME + ": --idle-timeout, --header-timeout and --max-connections must be positive");
            System.exit(2);
        }
        Launcher.run(NAME, options, demo -> {
            KilimServer server = new KilimServer(options.bind, options.port, options.threadsOrDefault(), DemoRoutes.router(demo))
                .idleTimeout(cmd.idleTimeoutMs)
                .headerTimeout(cmd.headerTimeoutMs);
            if (cmd.maxConnections != null) server.maxConnections(cmd.maxConnections);
            server.start();
            return server;
        });
    }
}

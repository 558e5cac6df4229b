package kiln.kilim;

import kiln.app.Launcher;
import kiln.app.ServerOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code java -jar kiln-kilim.jar [--port N] [--bind ADDR] [--data DIR] [--threads N]}: opens (and
 * on first start fills) the database, serves the endpoint registry, and on SIGTERM or Ctrl-C stops
 * accepting, finishes requests in flight, commits queued writes and closes LMDB.
 */
@Command(name = "kiln-kilim", mixinStandardHelpOptions = true, version = "kiln-kilim 0.1.0",
    description = "The Kilim fiber HTTP server over the kiln LMDB database.")
public final class KilimMain {
    private static final String NAME = "kiln-kilim";

    @Mixin
    ServerOptions server;

    public static void main(String[] args) {
        ServerOptions options = ServerOptions.parseOrExit(new KilimMain(), args);
        Launcher.run(NAME, options, demo -> {
            KilimServer server = new KilimServer(options.bind, options.port, options.threadsOrDefault(), Router.withEndpoints(demo))
                .idleTimeout(options.idleTimeoutMs)
                .headerTimeout(options.headerTimeoutMs)
                .maxConnections(options.maxConnectionsOrDefault());
            server.start();
            return server;
        });
    }
}

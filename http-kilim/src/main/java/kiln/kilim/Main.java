package kiln.kilim;

import java.io.IOException;
import java.net.BindException;
import java.util.logging.Logger;

import kiln.app.DemoDb;
import kiln.app.ServerOptions;
import kiln.app.Shutdown;
import kiln.db.Db;
import kiln.db.DbException;
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
    private static final Logger LOG = Logger.getLogger(Main.class.getName());
    private static final String NAME = "kiln-kilim";
    /** How long a stop waits for requests in flight, ms. */
    private static final long GRACE_MS = 5_000;

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
        Db db = null;
        try {
            db = Db.open(options.data);
            DemoDb demo = DemoDb.open(db);
            KilimServer server = new KilimServer(options.bind, options.port, options.threadsOrDefault(), DemoRoutes.router(demo))
                .idleTimeout(cmd.idleTimeoutMs)
                .headerTimeout(cmd.headerTimeoutMs);
            if (cmd.maxConnections != null) server.maxConnections(cmd.maxConnections);
            server.start();
            Db openDb = db;
            Shutdown.onSignal(() -> {
                LOG.info("stopping: finishing requests in flight, committing queued writes");
                server.stop(GRACE_MS);
                openDb.close();
                System.out.println(NAME + " stopped; database closed");  // JUL may already be reset by its own hook
            });
            System.out.println(NAME + " listening on http://" + options.bind + ":" + server.port() + "/");
            System.out.flush();
            // Kilim's carrier and selector threads keep the JVM running until the shutdown hook halts it.
        } catch (DbException e) {
            ServerOptions.fail(NAME, e.getMessage());
        } catch (BindException e) {
            closeQuietly(db);
            ServerOptions.fail(NAME, "cannot listen on " + options.bind + ":" + options.port + ": " + e.getMessage()
                + " (is another server using the port? choose another with --port)");
        } catch (IOException e) {
            closeQuietly(db);
            ServerOptions.fail(NAME, "cannot start the server: " + e);
        } catch (RuntimeException | Error e) {
            // e.g. unwoven classes: Kilim's threads are not daemons, so exit explicitly
            e.printStackTrace();
            closeQuietly(db);
            ServerOptions.fail(NAME, "cannot start: " + e);
        }
    }

    private static void closeQuietly(Db db) {
        if (db != null) db.close();
    }
}

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

    public static void main(String[] args) {
        ServerOptions options = ServerOptions.parseOrExit(new Main(), args);
        Db db = null;
        try {
            db = Db.open(options.data);
            DemoDb demo = DemoDb.open(db);
            KilimServer server = new KilimServer(options.bind, options.port, options.threadsOrDefault(), DemoRoutes.router(demo));
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

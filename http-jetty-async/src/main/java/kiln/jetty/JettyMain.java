package kiln.jetty;

import java.io.IOException;
import java.util.logging.Logger;

import kiln.app.DemoDb;
import kiln.app.ModeOptions;
import kiln.app.ServerOptions;
import kiln.app.Shutdown;
import kiln.db.Db;
import kiln.db.DbException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code java -jar kiln-jetty.jar [--port N] [--bind ADDR] [--data DIR] [--threads N]
 * [--mode async|blocking] [--workers N]}: opens (and on first start fills) the database, serves the
 * demo endpoints on embedded Jetty, and on SIGTERM or Ctrl-C stops accepting, finishes requests in
 * flight, commits queued writes and closes LMDB.
 */
@Command(name = "kiln-jetty", mixinStandardHelpOptions = true, version = "kiln-jetty 0.1.0",
    description = "The kiln demo endpoints on embedded Jetty 12 (servlet).%n"
        + "--threads sets Jetty's selector (IO) threads; connections are accepted by the selectors.%n"
        + "Endpoints: / /plaintext /json /db /queries?queries=N /updates?queries=N /fortunes /hello?delay=MS")
public final class JettyMain {
    private static final Logger LOG = Logger.getLogger(JettyMain.class.getName());
    static final String NAME = "kiln-jetty";
    /** How long a stop waits for requests in flight, ms. */
    private static final long GRACE_MS = 5_000;

    @Mixin
    ServerOptions server;

    @Mixin
    ModeOptions threading;

    public static void main(String[] args) {
        JettyMain command = new JettyMain();
        ServerOptions options = ServerOptions.parseOrExit(command, args);
        Db db = null;
        try {
            db = Db.open(options.data);
            DemoDb demo = DemoDb.open(db);
            JettyServer server = new JettyServer(options.bind, options.port, options.threadsOrDefault(),
                command.threading.mode, command.threading.workers, demo);
            server.start();
            Db openDb = db;
            Shutdown.onSignal(() -> {
                LOG.info("stopping: finishing requests in flight, committing queued writes");
                server.stop(GRACE_MS);
                openDb.close();
                LOG.info("stopped; database closed");
            });
            System.out.println(NAME + " listening on http://" + options.bind + ":" + server.port() + "/");
            System.out.flush();
            // main ends here; the server's (non-daemon) threads serve until the signal stops them.
        } catch (DbException e) {
            ServerOptions.fail(NAME, e.getMessage());
        } catch (IOException e) {
            closeQuietly(db);
            ServerOptions.fail(NAME, "cannot listen on " + options.bind + ":" + options.port + ": " + e.getMessage()
                + " (is another server using the port? choose another with --port)");
        }
    }

    private static void closeQuietly(Db db) {
        if (db != null) db.close();
    }
}

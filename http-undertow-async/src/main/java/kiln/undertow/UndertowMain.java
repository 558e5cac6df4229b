package kiln.undertow;

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
 * {@code java -jar kiln-undertow.jar [--port N] [--bind ADDR] [--data DIR] [--threads N]
 * [--mode async|blocking] [--workers N]}: opens (and on first start fills) the database, serves the
 * demo endpoints with Undertow's core handlers, and on SIGTERM or Ctrl-C stops accepting, finishes
 * requests in flight, commits queued writes and closes LMDB.
 */
@Command(name = "kiln-undertow", mixinStandardHelpOptions = true, version = "kiln-undertow 0.1.0",
    description = "The kiln demo endpoints on Undertow 2 core handlers (no servlet).%n"
        + "--threads sets Undertow's IO threads (XNIO selector threads, which also accept connections).%n"
        + "Endpoints: / /plaintext /json /db /queries?queries=N /updates?queries=N /fortunes /hello?delay=MS")
public final class UndertowMain {
    private static final Logger LOG = Logger.getLogger(UndertowMain.class.getName());
    static final String NAME = "kiln-undertow";
    /** How long a stop waits for requests in flight, ms. */
    private static final long GRACE_MS = 5_000;

    @Mixin
    ServerOptions server;

    @Mixin
    ModeOptions threading;

    public static void main(String[] args) {
        UndertowMain command = new UndertowMain();
        ServerOptions options = ServerOptions.parseOrExit(command, args);
        Db db = null;
        try {
            db = Db.open(options.data);
            DemoDb demo = DemoDb.open(db);
            UndertowServer server = new UndertowServer(options.bind, options.port, options.threadsOrDefault(),
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

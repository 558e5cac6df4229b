package kiln.server;

import java.io.IOException;
import java.util.logging.Logger;

import kiln.db.Db;
import kiln.db.DbException;
import kiln.http.Json;

/**
 * The life of every front end's process, written once: open the database, start the server, print the ready line the tests and {@code ab-sweep.sh} wait
 * for, and on SIGTERM or Ctrl-C stop accepting, finish requests in flight, commit queued writes,
 * close LMDB and exit 0 ({@link Shutdown}). A start-up failure prints one line and exits 1; a
 * database that becomes unusable while serving stops the server the same way and exits
 * {@value #EXIT_DATABASE_FATAL}, for the supervisor to restart it. With
 * {@code --backup DIR} it serves nothing: it backs the database up and exits ({@link BackupCommand}).
 */
public final class Launcher {
    private static final Logger LOG = Logger.getLogger(Launcher.class.getName());
    /** How long a stop waits for requests in flight, ms. */
    public static final long GRACE_MS = 5_000;
    /**
     * The exit status when the database became unusable ({@link DbException.Fatal}: an I/O error,
     * LMDB's panic, a corrupted page): sysexits' EX_IOERR. The systemd unit restarts on it.
     */
    public static final int EXIT_DATABASE_FATAL = 74;

    /** A running front end, as the launcher needs it. */
    public interface Server {
        /** @return the port actually bound (the real one when started with port 0) */
        int port();

        /** Stops accepting, lets requests in flight finish for up to {@code graceMillis}, then stops. */
        void stop(long graceMillis);
    }

    /** Builds and starts a front end over the opened database. */
    @FunctionalInterface
    public interface Starter {
        /**
         * @param db the database, open; {@code DemoDb.open(db)} adds the demo tables
         * @throws IOException when the address cannot be bound (port in use, address not local)
         */
        Server start(Db db) throws IOException;
    }

    private Launcher() {
    }

    /**
     * Runs a front end until the process is told to stop. Returns once the server is serving (its
     * own non-daemon threads keep the JVM alive); exits the JVM on a start-up failure.
     *
     * @param name    the program name, e.g. "kiln-kilim": used in the ready line and in errors
     * @param options the parsed common options
     * @param starter starts the server
     */
    public static void run(String name, ServerOptions options, Starter starter) {
        if (options.backup != null) BackupCommand.runAndExit(name, options);  // --backup: copy, print, exit
        exitOnOutOfMemory(name);
        Db db = null;
        try {
            db = options.database()
                .onFatal(e -> {
                    System.err.println(name + ": " + e.getMessage() + "; stopping (exit status " + EXIT_DATABASE_FATAL + ")");
                    Shutdown.exit(EXIT_DATABASE_FATAL);
                })
                .open();
            warmUp();
            Server server = starter.start(db);
            Db openDb = db;
            Shutdown.onSignal(() -> {
                LOG.info("stopping: finishing requests in flight, committing queued writes");
                server.stop(GRACE_MS);
                openDb.close();
                // printed, not logged: JUL's own shutdown hook may already have closed its handlers
                System.out.println(name + " stopped; database closed");
            });
            System.out.println(name + " listening on http://" + options.bind + ":" + server.port() + "/");
            System.out.flush();
        } catch (DbException e) {
            ServerOptions.fail(name, e.getMessage());
        } catch (IOException e) {
            closeQuietly(db);
            ServerOptions.fail(name, "cannot listen on " + options.bind + ":" + options.port + ": " + e.getMessage()
                + " (is another server using the port? choose another with --port)");
        } catch (RuntimeException | Error e) {
            // e.g. classes Kilim did not weave; server threads may be running, so exit explicitly
            e.printStackTrace();
            closeQuietly(db);
            ServerOptions.fail(name, "cannot start: " + e);
        }
    }

    /**
     * Loads what a first request would otherwise load on a carrier: Jackson's mapper, writer and
     * reader (a first {@code GET /json} spent 323 ms there, reported by Kilim's blocked-carrier
     * checker). The database's own first use of HMAC-SHA256 is warmed at its open.
     */
    private static void warmUp() {
        byte[] json = Json.write(java.util.Map.of("warm", java.util.List.of(1, "up", true)));
        Json.read(json, java.util.Map.class);
    }

    /**
     * Without {@code -XX:+ExitOnOutOfMemoryError} (a plain {@code java -jar}), a thread that dies of
     * an OutOfMemoryError ends the process with status 3, as that flag does, rather than leaving a
     * server without its selector, writer or reaper: a supervisor restarts it. Writes acknowledged
     * before are durable (each answer waits for its commit). With the flag the JVM exits first.
     */
    private static void exitOnOutOfMemory(String name) {
        Thread.setDefaultUncaughtExceptionHandler((thread, e) -> {
            if (e instanceof OutOfMemoryError) {
                System.err.println(name + ": " + e + " in thread " + thread.getName() + "; exiting (status 3)");
                Runtime.getRuntime().halt(3);
            }
            System.err.print("Exception in thread \"" + thread.getName() + "\" ");
            e.printStackTrace();
        });
    }

    private static void closeQuietly(Db db) {
        if (db != null) db.close();
    }
}

package kiln.server;

import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The contract's stop for every front end: on SIGTERM or Ctrl-C (SIGINT) stop accepting, finish
 * requests in flight, close the database, and exit with status 0.
 *
 * <p>A JVM that a signal stops runs its shutdown hooks and then exits with 128 + the signal number
 * (143 for SIGTERM), even when every hook finished cleanly. So the hook ends the process itself
 * with {@link Runtime#halt(int) halt(0)} once the stop is complete. That is only right because no
 * front end calls {@link System#exit} after {@link #onSignal} (fatal start-up errors exit before
 * it) except through {@link #exit}, which records its status for the hook first.
 */
public final class Shutdown {
    private static final Logger LOG = Logger.getLogger(Shutdown.class.getName());

    /** The status the hook exits with once the stop is complete: 0 for a signal, or {@link #exit}'s. */
    private static volatile int status;

    private Shutdown() {
    }

    /**
     * Stops the process as a signal would (the hook of {@link #onSignal} runs: stop accepting,
     * finish requests in flight, close the database), but exits with {@code status}, for a
     * supervisor to see why and restart it. Does not return.
     *
     * @param status the exit status, e.g. {@link Launcher#EXIT_DATABASE_FATAL}
     */
    public static void exit(int status) {
        Shutdown.status = status;
        System.exit(status);
    }

    /**
     * Registers {@code stop} to run when the JVM is asked to stop, followed by exit status 0 (or
     * {@link #exit}'s status), or 1 when {@code stop} throws.
     *
     * @param stop stops the server and closes the database; runs on a thread named kiln-shutdown
     */
    public static void onSignal(Runnable stop) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            int exitStatus = status;
            try {
                stop.run();
            } catch (RuntimeException | Error e) {
                LOG.log(Level.SEVERE, "the stop failed", e);
                if (exitStatus == 0) exitStatus = 1;
            }
            System.out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(exitStatus);
        }, "kiln-shutdown"));
    }
}

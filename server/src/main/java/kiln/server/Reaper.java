package kiln.server;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A server's reaper: one daemon thread, {@code kiln-reaper}, that runs a sweep of its connections at
 * a fixed period, ending those past a deadline. kiln's own HTTP layer sweeps its {@link Connections}
 * (idle, header and write deadlines); a server library without a header timeout gets its
 * {@link HeaderTimeouts}. A sweep that throws is logged and the next one runs anyway.
 */
final class Reaper {
    private static final Logger LOG = Logger.getLogger(Reaper.class.getName());

    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(Threads.daemon("kiln-reaper"));

    /**
     * @param periodMs the time between two sweeps, ms (> 0); the first runs one period from now
     * @param sweep    looks at every connection; must not block
     */
    Reaper(long periodMs, Runnable sweep) {
        thread.scheduleWithFixedDelay(() -> {
            try {
                sweep.run();
            } catch (RuntimeException e) {
                // ScheduledExecutorService drops a task that throws: keep reaping
                LOG.log(Level.WARNING, "a connection sweep failed", e);
            }
        }, periodMs, periodMs, TimeUnit.MILLISECONDS);
    }

    /** Stops the thread; a sweep in progress finishes. */
    void stop() {
        thread.shutdownNow();
    }
}

package kiln.app;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The async mode's threads for front ends that wait with {@link java.util.concurrent.CompletionStage}s
 * (Jetty, Undertow): the request queue with its {@code kiln-worker-N} threads, and one
 * {@code kiln-timer-1} thread that ends {@code /hello} delays. Neither ever blocks on the database.
 */
public final class WorkerPool {
    private final ExecutorService workers;
    private final ScheduledExecutorService timer;

    /** @param workers worker threads serving the queue, 1..{@value ModeOptions#MAX_WORKERS} */
    public WorkerPool(int workers) {
        this.workers = Executors.newFixedThreadPool(workers, named("kiln-worker-"));
        this.timer = Executors.newSingleThreadScheduledExecutor(named("kiln-timer-"));
    }

    /** @return the request queue: each task submitted runs on a worker */
    public ExecutorService queue() {
        return workers;
    }

    /** @return the endpoints, resuming writes and delays on the workers ({@link AsyncEndpoints.Waits#nonBlocking}) */
    public AsyncEndpoints endpoints(DemoDb demo) {
        return new AsyncEndpoints(demo, AsyncEndpoints.Waits.nonBlocking(workers, timer));
    }

    /** Stops the timer, lets the workers finish queued tasks for up to 1 s, then interrupts them. */
    public void stop() {
        timer.shutdownNow();
        workers.shutdown();
        try {
            if (!workers.awaitTermination(1, TimeUnit.SECONDS)) workers.shutdownNow();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static ThreadFactory named(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}

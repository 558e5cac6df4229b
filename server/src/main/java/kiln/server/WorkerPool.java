package kiln.server;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import kiln.http.Response;

/**
 * The async mode's threads for front ends whose threads must never block (Jetty, Undertow): the
 * request queue with its {@code kiln-worker-N} threads, and one {@code kiln-timer-1} thread that
 * ends {@code /hello} delays. Neither ever blocks on the database.
 */
public final class WorkerPool {
    private final ExecutorService workers;
    private final ScheduledExecutorService timer;

    /** @param workers worker threads serving the queue, 1..{@value ModeOptions#MAX_WORKERS} */
    public WorkerPool(int workers) {
        this.workers = Executors.newFixedThreadPool(workers, Threads.daemon("kiln-worker-"));
        this.timer = Executors.newSingleThreadScheduledExecutor(Threads.daemon("kiln-timer-"));
    }

    /** @return the request queue: each task submitted runs on a worker */
    public ExecutorService queue() {
        return workers;
    }

    /** @return the timer thread: ends delays, and schedules the heartbeats of streams sent asynchronously ({@link OpenStreams#runAsync}) */
    public ScheduledExecutorService timer() {
        return timer;
    }

    /**
     * Runs {@code step} on the workers without blocking any of them ({@link Step#runAsync}): after a
     * write or a delay the rest of the request continues on a worker.
     *
     * @param send receives the response, on the calling thread when the step is done, else on a worker
     */
    public void run(Step step, Consumer<Response> send) {
        Step.runAsync(step, workers, timer, send);
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
}

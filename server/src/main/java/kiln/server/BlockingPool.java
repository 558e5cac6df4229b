package kiln.server;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A bounded pool of platform threads for the calls a fiber or a virtual thread must not make on its
 * own thread: a blocking library (JDBC, a blocking SMTP or HTTP client, file I/O), a native call, a
 * long computation. Submit the call, then wait for its future the front end's way
 * ({@code Fibers.blocking(() -> ...)} on Kilim, {@code Waits.blocking(() -> ...)} on virtual
 * threads), as Vert.x's {@code executeBlocking} and Kotlin's {@code Dispatchers.IO} do.
 *
 * <p>Bounded twice, so that a flood of blocking calls cannot exhaust the box: at most
 * {@code threads} run at once ({@code kiln-blocking-N}, daemons, created on demand, ended after
 * 60 s idle), and at most {@code queue} wait; beyond that {@link #submit} gives a future failed with
 * {@link RejectedExecutionException}, which the failure policy answers with 503 and
 * {@code Retry-After} ({@link Failures}).
 *
 * <pre>{@code
 * String row = Fibers.blocking(() -> jdbc.queryForString(sql));     // the shared pool, from a Kilim handler
 * BlockingPool smtp = new BlockingPool("mail-", 4, 100);            // a resource with a bound of its own
 * await(smtp.submit(() -> mailer.send(message)));
 * }</pre>
 */
public final class BlockingPool {
    /** Threads of {@link #shared()}: enough for the blocking calls of a small box, as Vert.x's 20-thread worker pool. */
    public static final int SHARED_THREADS = 32;
    /** Calls that may wait for a thread of {@link #shared()}. */
    public static final int SHARED_QUEUE = 1024;

    private static final class Shared {
        static final BlockingPool POOL = new BlockingPool("kiln-blocking-", SHARED_THREADS, SHARED_QUEUE);
    }

    private final ThreadPoolExecutor executor;
    private final int threads;
    private final int queue;

    /**
     * @param namePrefix the threads' name without the number, e.g. {@code "jdbc-"}
     * @param threads    calls that may run at once, >= 1
     * @param queue      calls that may wait for a thread, >= 1
     */
    public BlockingPool(String namePrefix, int threads, int queue) {
        if (threads < 1 || queue < 1) throw new IllegalArgumentException("threads and queue must be >= 1, got " + threads + " and " + queue);
        this.threads = threads;
        this.queue = queue;
        executor = new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(queue), Threads.daemon(namePrefix));
        executor.allowCoreThreadTimeOut(true);
    }

    /** @return the pool {@code Fibers.blocking} and {@code Waits.blocking} use: {@value #SHARED_THREADS} threads, {@value #SHARED_QUEUE} waiting calls */
    public static BlockingPool shared() {
        return Shared.POOL;
    }

    /**
     * Runs {@code call} on one of the pool's threads.
     *
     * @return its result, or its exception; failed with {@link RejectedExecutionException} at once
     *         when every thread is busy and the queue is full
     */
    public <T> CompletableFuture<T> submit(Callable<T> call) {
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            executor.execute(() -> {
                try {
                    result.complete(call.call());
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
            });
        } catch (RejectedExecutionException e) {
            result.completeExceptionally(new RejectedExecutionException("the blocking pool is full: " + threads
                + " calls running and " + queue + " waiting", e));
        }
        return result;
    }

    /** @return calls running now */
    public int active() {
        return executor.getActiveCount();
    }
}

package kiln.loom;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import kiln.server.BlockingPool;

/**
 * How a virtual-thread handler waits, the twins of {@code kiln.kilim.Fibers}: for a future with a
 * timeout ({@link #await}) and for a blocking call run on a bounded pool of platform threads
 * ({@link #blocking}). A virtual thread may simply block (its carrier is freed), so these exist for
 * what blocking alone does not give: a bound on the wait, and a place for calls that would pin the
 * carrier (a native call, a {@code synchronized} wait on JDK 21-23) or that a resource must bound
 * (a JDBC pool).
 *
 * <pre>{@code
 * HttpResponse<String> r = Waits.await(http.sendAsync(req, ofString()), Duration.ofSeconds(2));
 * String row = Waits.blocking(() -> jdbc.queryForRow(sql));
 * }</pre>
 */
public final class Waits {
    private Waits() {
    }

    /**
     * Parks the calling (virtual) thread until {@code future} completes or {@code timeout} passes.
     * On a timeout the future is left as it is: cancel it if it holds something.
     *
     * @param timeout how long to wait at most, > 0
     * @return its result
     * @throws TimeoutException     when {@code timeout} passed first (the failure policy answers 504)
     * @throws InterruptedException when the thread is interrupted (the server is stopping)
     * @throws RuntimeException     its failure when that is unchecked, an {@link Error} as it is; a
     *                              checked failure arrives wrapped in a {@link CompletionException}
     */
    public static <T> T await(CompletionStage<T> future, Duration timeout) throws TimeoutException, InterruptedException {
        long nanos = timeout.toNanos();
        if (nanos <= 0) throw new IllegalArgumentException("timeout must be > 0 ms, got " + timeout);
        try {
            return future.toCompletableFuture().get(nanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new TimeoutException("no result within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    /**
     * Runs {@code call} on the shared bounded pool of platform threads ({@link BlockingPool#shared()})
     * and parks the calling thread until it returns.
     *
     * @return what {@code call} returned
     * @throws RuntimeException what {@code call} threw when unchecked; a checked exception arrives
     *                          wrapped in a {@link CompletionException}; a
     *                          {@link java.util.concurrent.RejectedExecutionException} when the pool
     *                          and its queue are full (the failure policy answers 503)
     */
    public static <T> T blocking(Callable<T> call) throws InterruptedException {
        try {
            return BlockingPool.shared().submit(call).get();
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    private static RuntimeException unwrap(Throwable cause) {
        if (cause instanceof RuntimeException r) return r;
        if (cause instanceof Error err) throw err;
        return new CompletionException(cause);
    }
}

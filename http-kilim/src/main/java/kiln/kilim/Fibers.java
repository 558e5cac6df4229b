package kiln.kilim;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;

import kilim.Cell;
import kilim.Pausable;
import kilim.Task;
import kiln.server.BlockingPool;

/**
 * How fiber code waits, one call each: for a future ({@link #await}: a database read or write, an
 * {@code HttpClient.sendAsync}, any {@link CompletionStage}, with or without a timeout), for time
 * ({@link #sleep}), and for a blocking call run on a bounded pool of threads ({@link #blocking}: JDBC,
 * a blocking client, file I/O). Each pauses the calling fiber and frees its carrier thread for other
 * connections; blocking calls ({@code join()}, {@code Thread.sleep}, {@code HttpClient.send}) would
 * hold the carrier (the server then hands the carrier's other fibers to a new thread after 20 ms, but
 * the blocked fiber costs a thread for as long as it blocks).
 *
 * <pre>{@code
 * import static kiln.kilim.Fibers.await;
 *
 * long count = await(db.write(txn -> ...));                                  // until the commit is on disk
 * HttpResponse<String> r = await(http.sendAsync(req, ofString()), Duration.ofSeconds(2));
 * String row = Fibers.blocking(() -> jdbc.queryForRow(sql));                 // a blocking library
 * }</pre>
 *
 * <p>Call these only from Kilim fiber code: a method that declares {@code throws Pausable}, woven by
 * Kilim's weaver (kiln's {@code kiln-kilim-weaver} Maven plugin), such as a {@link Handler}. Their
 * virtual-thread twins are in {@code kiln.loom.Waits}.
 */
public final class Fibers {
    private Fibers() {
    }

    /**
     * Pauses the calling fiber until {@code future} completes; whichever thread completes it (the
     * database's writer, an HTTP client's thread) only signals, and the fiber resumes on a carrier.
     * A completed future (every {@code db.read} on LMDB, where reads run inline) returns at once, without a pause.
     *
     * @param future what to wait for, e.g. {@code db.write(query)}
     * @return its result
     * @throws RuntimeException its failure when that is unchecked (a {@code DbException}, the query's
     *                          own exception), an {@link Error} as it is; a checked failure arrives
     *                          wrapped in a {@link CompletionException}; a cancelled future's
     *                          {@link java.util.concurrent.CancellationException}
     */
    public static <T> T await(CompletionStage<T> future) throws Pausable {
        CompletableFuture<T> f = future.toCompletableFuture();
        if (!f.isDone()) {
            Cell<Boolean> done = new Cell<>();
            f.whenComplete((r, t) -> done.putnb(Boolean.TRUE));
            done.get();
        }
        return result(f);
    }

    /** @return the result of the completed {@code f}, or its failure as {@link #await(CompletionStage)} throws it */
    private static <T> T result(CompletableFuture<T> f) {
        try {
            return f.getNow(null);
        } catch (CompletionException e) {
            throw unwrap(e.getCause() != null ? e.getCause() : e);
        }
    }

    /**
     * Pauses the calling fiber until {@code future} completes or {@code timeout} passes, whichever is
     * first. On a timeout the future is left as it is: cancel it if it holds something (an
     * {@code HttpClient.sendAsync} future's {@code cancel(true)} aborts the exchange on JDK 16+).
     *
     * @param future  what to wait for, e.g. {@code client.sendAsync(request, ofString())}
     * @param timeout how long to wait at most, > 0
     * @return its result
     * @throws TimeoutException when {@code timeout} passed first (the failure policy answers 504)
     * @throws RuntimeException as {@link #await(CompletionStage)}
     */
    public static <T> T await(CompletionStage<T> future, Duration timeout) throws Pausable, TimeoutException {
        long ms = timeout.toMillis();
        if (ms <= 0) throw new IllegalArgumentException("timeout must be > 0 ms, got " + timeout);
        CompletableFuture<T> f = future.toCompletableFuture();
        if (!f.isDone()) {
            Cell<Boolean> done = new Cell<>();
            f.whenComplete((r, t) -> done.putnb(Boolean.TRUE));
            if (done.get(ms) == null && !f.isDone()) throw new TimeoutException("no result within " + ms + " ms");
        }
        return result(f);
    }

    /**
     * Runs {@code call} on the shared bounded pool of platform threads ({@link BlockingPool#shared()})
     * and pauses the calling fiber until it returns: the way to use a blocking library (JDBC, a
     * blocking SMTP client, file I/O) from fiber code without holding a carrier.
     *
     * @return what {@code call} returned
     * @throws RuntimeException what {@code call} threw when unchecked; a checked exception arrives
     *                          wrapped in a {@link CompletionException}; a
     *                          {@link java.util.concurrent.RejectedExecutionException} when the pool
     *                          and its queue are full (the failure policy answers 503)
     */
    public static <T> T blocking(Callable<T> call) throws Pausable {
        return await(BlockingPool.shared().submit(call));
    }

    /**
     * Pauses the calling fiber for {@code millis} ms; the carrier runs other fibers meanwhile
     * ({@code Thread.sleep} would hold it). Timers are kept by carrier 0, the selector thread.
     */
    public static void sleep(long millis) throws Pausable {
        Task.sleep(millis);
    }

    private static RuntimeException unwrap(Throwable cause) {
        if (cause instanceof RuntimeException) return (RuntimeException) cause;
        if (cause instanceof Error) throw (Error) cause;
        return new CompletionException(cause);
    }
}

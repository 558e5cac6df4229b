package kiln.kilim;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

import kilim.Cell;
import kilim.Pausable;
import kilim.Task;

/**
 * How fiber code waits, one call each: for a future ({@link #await}: a database read or write, an
 * {@code HttpClient.sendAsync}, any {@link CompletionStage}) and for time ({@link #sleep}). Both
 * pause the calling fiber and free its carrier thread for other connections; blocking calls
 * ({@code join()}, {@code Thread.sleep}) would hold the carrier and every fiber on it.
 *
 * <pre>{@code
 * import static kiln.kilim.Fibers.await;
 *
 * long count = await(db.write(txn -> ...));    // pauses this fiber until the commit is on disk
 * }</pre>
 *
 * <p>Call these only from Kilim fiber code: a method that declares {@code throws Pausable}, woven by
 * Kilim's weaver (kiln's {@code kiln-kilim-weaver} Maven plugin), such as a {@link Handler}.
 */
public final class Fibers {
    private Fibers() {
    }

    /**
     * Pauses the calling fiber until {@code future} completes; whichever thread completes it (the
     * database's writer, an HTTP client's thread) only signals, and the fiber resumes on a carrier.
     * A completed future (every {@code db.read}: reads run inline) returns at once, without a pause.
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
        try {
            return f.getNow(null);
        } catch (CompletionException e) {
            throw unwrap(e.getCause() != null ? e.getCause() : e);
        }
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

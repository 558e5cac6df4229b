package kiln.db;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import kilim.Cell;
import kilim.Pausable;

/**
 * The pending result of a {@link Db#read} or {@link Db#write}. Three ways to wait, one per kind of
 * caller:
 * <ul>
 *   <li>in a Kilim fiber: {@link #await()} pauses the fiber, never its carrier thread;</li>
 *   <li>on a plain thread that may block: {@link #join()};</li>
 *   <li>on a thread that must not block: a {@link java.util.concurrent.CompletionStage} callback
 *       ({@code whenComplete}, {@code thenAccept}...). Write callbacks run on the database's writer
 *       thread unless you use an {@code ...Async} variant: keep them short.</li>
 * </ul>
 * Only the database completes these futures.
 *
 * @param <R> the query's result type
 */
public final class QueryFuture<R> extends CompletableFuture<R> {

    /**
     * Waits for the result without blocking the carrier thread. Call only from Kilim fiber code
     * (a woven method that throws {@code Pausable}); plain threads use {@link #join()}.
     *
     * @return the query's result
     * @throws RuntimeException the query's own unchecked exception, or a {@link DbException};
     *                          a checked exception from the query arrives wrapped in a
     *                          {@link CompletionException}
     */
    public R await() throws Pausable {
        if (!isDone()) {
            Cell<Boolean> done = new Cell<>();
            whenComplete((r, t) -> done.putnb(Boolean.TRUE));
            done.get();
        }
        try {
            return get();
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        } catch (InterruptedException e) {
            throw new IllegalStateException("unreachable: the future is done", e);
        }
    }

    private static RuntimeException unwrap(Throwable cause) {
        if (cause instanceof RuntimeException) return (RuntimeException) cause;
        if (cause instanceof Error) throw (Error) cause;
        return new CompletionException(cause);
    }

    static <R> QueryFuture<R> failed(Throwable t) {
        QueryFuture<R> f = new QueryFuture<>();
        f.completeExceptionally(t);
        return f;
    }
}

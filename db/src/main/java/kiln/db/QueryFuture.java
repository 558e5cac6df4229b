package kiln.db;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

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
 * Only the database completes these futures: the methods of {@link CompletableFuture} that would
 * let a caller complete, cancel or time out this one throw {@link UnsupportedOperationException}
 * (to give up waiting, time out a copy: {@code future.copy().orTimeout(1, SECONDS)}). Futures
 * derived from it ({@code thenApply}, {@code copy}...) are plain {@link CompletableFuture}s.
 *
 * @param <R> the query's result type
 */
public final class QueryFuture<R> extends CompletableFuture<R> {

    QueryFuture() {
    }

    /** Completes this future with the query's result; the database's side of {@link #complete}. */
    boolean succeed(R value) {
        return super.complete(value);
    }

    /** Completes this future with a failure; the database's side of {@link #completeExceptionally}. */
    boolean fail(Throwable failure) {
        return super.completeExceptionally(failure);
    }

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

    /**
     * Waits on a plain thread; in fiber code use {@link #await()}.
     *
     * @throws IllegalStateException when called from a Kilim carrier thread (fiber code) before the
     *                               result is in: blocking there would stall every fiber of that carrier
     */
    @Override
    public R join() {
        refuseBlockingACarrier("join");
        return super.join();
    }

    /** As {@link #join()}: refused on a Kilim carrier thread while the result is not in. */
    @Override
    public R get() throws InterruptedException, ExecutionException {
        refuseBlockingACarrier("get");
        return super.get();
    }

    /** As {@link #join()}: refused on a Kilim carrier thread while the result is not in. */
    @Override
    public R get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        refuseBlockingACarrier("get");
        return super.get(timeout, unit);
    }

    private void refuseBlockingACarrier(String method) {
        if (!isDone() && KilimCarrier.isCurrentThread()) {
            throw new IllegalStateException(method + "() on a database future in fiber code (Kilim carrier thread "
                + Thread.currentThread().getName() + ") would block the carrier and every fiber on it: use future.await(),"
                + " which pauses only this fiber. join() and get() are for plain threads.");
        }
    }

    private static RuntimeException unwrap(Throwable cause) {
        if (cause instanceof RuntimeException) return (RuntimeException) cause;
        if (cause instanceof Error) throw (Error) cause;
        return new CompletionException(cause);
    }

    static <R> QueryFuture<R> failed(Throwable t) {
        QueryFuture<R> f = new QueryFuture<>();
        f.fail(t);
        return f;
    }

    private static UnsupportedOperationException onlyTheDatabase(String method) {
        return new UnsupportedOperationException(method + "() on a QueryFuture: only the database completes it;"
            + " derive a future of your own (thenApply, copy) and complete or time out that");
    }

    /** @throws UnsupportedOperationException always: only the database completes a query's future */
    @Override
    public boolean complete(R value) {
        throw onlyTheDatabase("complete");
    }

    /** @throws UnsupportedOperationException always: only the database completes a query's future */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        throw onlyTheDatabase("completeExceptionally");
    }

    /** @throws UnsupportedOperationException always: a query cannot be called off once submitted */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        throw onlyTheDatabase("cancel");
    }

    /** @throws UnsupportedOperationException always */
    @Override
    public void obtrudeValue(R value) {
        throw onlyTheDatabase("obtrudeValue");
    }

    /** @throws UnsupportedOperationException always */
    @Override
    public void obtrudeException(Throwable ex) {
        throw onlyTheDatabase("obtrudeException");
    }

    /** @throws UnsupportedOperationException always */
    @Override
    public CompletableFuture<R> completeAsync(Supplier<? extends R> supplier, Executor executor) {
        throw onlyTheDatabase("completeAsync");
    }

    /** @throws UnsupportedOperationException always */
    @Override
    public CompletableFuture<R> completeAsync(Supplier<? extends R> supplier) {
        throw onlyTheDatabase("completeAsync");
    }

    /** @throws UnsupportedOperationException always: time out a {@link #copy()} instead */
    @Override
    public CompletableFuture<R> orTimeout(long timeout, TimeUnit unit) {
        throw onlyTheDatabase("orTimeout");
    }

    /** @throws UnsupportedOperationException always: time out a {@link #copy()} instead */
    @Override
    public CompletableFuture<R> completeOnTimeout(R value, long timeout, TimeUnit unit) {
        throw onlyTheDatabase("completeOnTimeout");
    }
}

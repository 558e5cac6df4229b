package kiln.db;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The pending result of a {@link Db#read} or {@link Db#write}. Three ways to wait, one per kind of
 * caller:
 * <ul>
 *   <li>in a fiber: the fiber runtime's one pausing call on a {@code CompletionStage}
 *       ({@code kiln.kilim.Fibers.await(future)}), which pauses the fiber, never its carrier thread;</li>
 *   <li>on a thread that may block (a plain or a virtual thread): {@link #join()};</li>
 *   <li>on a thread that must not block: a {@link java.util.concurrent.CompletionStage} callback
 *       ({@code whenComplete}, {@code thenAccept}...). Write callbacks run on the database's writer
 *       thread unless you use an {@code ...Async} variant (or on its deadline thread, for a future
 *       that the deadline failed): keep them short.</li>
 * </ul>
 * A future not completed within the database's deadline ({@link Db.Builder#deadline}) fails with
 * {@link DbException.DeadlineExceeded}, which says whether its write is applied.
 * Only the database completes these futures: the methods of {@link CompletableFuture} that would
 * let a caller complete, cancel or time out this one throw {@link UnsupportedOperationException}
 * (to give up waiting, time out a copy: {@code future.copy().orTimeout(1, SECONDS)}). Futures
 * derived from it ({@code thenApply}, {@code copy}...) are plain {@link CompletableFuture}s.
 *
 * <pre>{@code
 * long n = await(db.write(txn -> ...));               // a Kilim handler: the fiber pauses
 * long n = db.write(txn -> ...).join();               // a virtual thread or a plain thread: it blocks
 * db.write(txn -> ...).whenComplete((n, e) -> ...);   // an event loop: a callback, on the writer thread
 * }</pre>
 *
 * <p>{@code join()} of a pending future on a Kilim carrier thread throws
 * {@link IllegalStateException} at once, naming {@code await} (the Kilim server installs the check
 * with {@link #refuseBlockingWhere}): blocking there would stop every fiber of the carrier.
 *
 * @param <R> the query's result type
 */
public final class QueryFuture<R> extends CompletableFuture<R> {
    /** Says why the calling thread must not block, or null when it may; see {@link #refuseBlockingWhere}. */
    private static volatile Supplier<String> blockingGuard = () -> null;

    /** Calls off a queued write before the writer takes it (a refused join(), the deadline); null for reads and feed futures. */
    private final Withdrawal withdrawal;
    /** Set once something may wait on this future; see {@link #awaited}. */
    private volatile boolean awaited;

    /** A queued write's way to be called off, while the writer has not taken it yet. */
    interface Withdrawal {
        /** @return true when the write was called off: it will never run; false when it runs (or ran) */
        boolean withdraw();
    }

    QueryFuture() {
        this(null);
    }

    QueryFuture(Withdrawal withdrawal) {
        this.withdrawal = withdrawal;
    }

    /**
     * Installs the check that {@link #join()} and {@link #get()} make before they block on an
     * unfinished future: a fiber runtime installs one that names its carrier threads, where blocking
     * would stall every fiber of the carrier ({@code kiln.kilim.KilimServer} does, for Kilim's). The
     * last call wins; the database itself knows no fiber runtime.
     *
     * @param guard run on the thread about to block: returns why it must not (e.g. {@code "in fiber
     *              code (Kilim carrier thread kiln-selector) would block the carrier ...: use ..."}), or
     *              null when it may
     */
    public static void refuseBlockingWhere(Supplier<String> guard) {
        blockingGuard = guard;
    }

    /**
     * @return whether anything may wait on this future: a stage built on it ({@code thenRun},
     *         {@code whenComplete}, {@code copy}...: each is made by {@link #newIncompleteFuture}) or
     *         a thread in {@link #join()} or {@link #get()}. A change feed hands the completion of a
     *         future that is awaited to its wake thread, and completes one that is not at once. (Not
     *         seen: a future only combined as another's argument, {@code allOf}; it is then completed
     *         where the feed publishes, as before the wake thread.)
     */
    boolean awaited() {
        return awaited;
    }

    private void noteAwaited() {
        if (!awaited) awaited = true;
    }

    /**
     * Notes that a stage is built on this future, so that a change feed hands its completion to the
     * database's wake thread; the stage is a plain {@link CompletableFuture}.
     */
    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        noteAwaited();
        return new CompletableFuture<>();
    }

    /** Notes that a stage waits on this future, as {@link #newIncompleteFuture} does for the other stages. */
    @Override
    public java.util.concurrent.CompletionStage<R> minimalCompletionStage() {
        noteAwaited();
        return super.minimalCompletionStage();
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
     * Waits on a thread that may block; in fiber code use the fiber runtime's pausing call.
     *
     * @throws IllegalStateException when the installed guard ({@link #refuseBlockingWhere}) refuses
     *                               the calling thread before the result is in: a fiber's carrier,
     *                               where blocking would stall every fiber of that carrier. A write
     *                               still waiting in the writer's queue is then withdrawn (it never
     *                               runs, and its future fails with the same exception); one the
     *                               writer has already taken into a batch commits, and the message
     *                               says which
     * @throws CompletionException   the query's failure, as {@link CompletableFuture#join()}
     */
    @Override
    public R join() {
        refuseBlockingACarrier("join");
        noteAwaited();
        return super.join();
    }

    /** As {@link #join()}: refused where the guard says so while the result is not in. */
    @Override
    public R get() throws InterruptedException, ExecutionException {
        refuseBlockingACarrier("get");
        noteAwaited();
        return super.get();
    }

    /** As {@link #join()}: refused where the guard says so while the result is not in. */
    @Override
    public R get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        refuseBlockingACarrier("get");
        noteAwaited();
        return super.get(timeout, unit);
    }

    /**
     * Refuses to block where the guard says so. A refused write that the writer has not taken yet is
     * withdrawn (its future fails with the refusal), so that a client which retries after the error
     * does not write twice; one already taken commits as usual.
     */
    private void refuseBlockingACarrier(String method) {
        if (isDone()) return;
        String why = blockingGuard.get();
        if (why == null) return;
        String refusal = method + "() on a database future " + why;
        if (withdrawal == null) throw new IllegalStateException(refusal);
        if (withdrawal.withdraw()) {
            IllegalStateException withdrawn = new IllegalStateException(refusal + " The write was withdrawn before it ran: nothing was written.");
            fail(withdrawn);
            throw withdrawn;
        }
        throw new IllegalStateException(refusal + " The write had already begun and commits anyway.");
    }

    /** @return a future complete with {@code value} (the database's own: a feed's answer already in memory) */
    static <R> QueryFuture<R> succeeded(R value) {
        QueryFuture<R> f = new QueryFuture<>();
        f.succeed(value);
        return f;
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

package kiln.comsat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import co.paralleluniverse.fibers.FiberAsync;
import co.paralleluniverse.fibers.SuspendExecution;

/**
 * Waits in a Quasar fiber for a {@link CompletableFuture} (a {@link kiln.db.QueryFuture}) without
 * blocking the fiber's carrier thread: a {@link FiberAsync} whose callback is the future's
 * completion. The fiber parks; whichever thread completes the future (the database's writer thread,
 * after the durable commit) unparks it, and the fiber resumes on a carrier of its scheduler, so the
 * writer thread only signals.
 *
 * <p>A future that is already done (every {@link kiln.db.Db#read}: reads run inline) is not
 * waited for at all.
 */
final class FiberAwait extends FiberAsync<Void, RuntimeException> {
    private static final long serialVersionUID = 1L;

    private final transient CompletableFuture<?> future;

    private FiberAwait(CompletableFuture<?> future) {
        this.future = future;
    }

    @Override
    protected void requestAsync() {
        // Called by FiberAsync.run() before the fiber parks; the callback may run at once (future
        // already complete) or later on the completing thread: FiberAsync handles both.
        future.whenComplete((result, failure) -> asyncCompleted(null));
    }

    /**
     * @return the future's result, once it has one
     * @throws RuntimeException the future's failure: its own unchecked exception (a
     *                          {@link kiln.db.DbException}, the query's exception), an
     *                          {@link Error} as is, a checked one wrapped in a
     *                          {@link CompletionException}
     * @throws InterruptedException when the fiber is interrupted while waiting
     */
    static <R> R await(CompletableFuture<R> future) throws SuspendExecution, InterruptedException {
        if (!future.isDone()) waitFor(future).run();
        return resultOf(future);
    }

    // Kept out of await(): Quasar's analyzer warns about a "new X(...)" in a suspendable method.

    private static FiberAwait waitFor(CompletableFuture<?> future) {
        return new FiberAwait(future);
    }

    private static <R> R resultOf(CompletableFuture<R> done) {
        try {
            return done.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) throw (RuntimeException) cause;
            if (cause instanceof Error) throw (Error) cause;
            throw new CompletionException(cause);
        } catch (InterruptedException e) {
            throw new IllegalStateException("unreachable: the future is done", e);
        }
    }
}

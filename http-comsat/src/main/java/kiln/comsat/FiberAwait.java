package kiln.comsat;

import java.util.concurrent.CompletableFuture;

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
     * Returns once {@code future} is complete, normally or not; the caller reads its outcome.
     *
     * @throws InterruptedException when the fiber is interrupted while waiting
     */
    static void await(CompletableFuture<?> future) throws SuspendExecution, InterruptedException {
        if (!future.isDone()) waitFor(future).run();
    }

    // Kept out of await(): Quasar's analyzer warns about a "new X(...)" in a suspendable method.

    private static FiberAwait waitFor(CompletableFuture<?> future) {
        return new FiberAwait(future);
    }
}

package kiln.undertow;

import java.util.logging.Level;
import java.util.logging.Logger;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.SameThreadExecutor;
import kiln.http.Reply;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.server.WorkerPool;
import kiln.server.Streaming;

/**
 * The async mode. Threading rule: the IO thread only parses the request and queues the exchange to
 * the worker threads; it never runs endpoint code. A worker runs the endpoint; reads finish inline,
 * and a request that waits (durable write, {@code /hello} delay) is finished later by a worker
 * again, through {@link WorkerPool#run}. No worker ever blocks: the response goes
 * out through Undertow's non-blocking sender.
 */
final class AsyncHandler implements HttpHandler {
    private static final Logger LOG = Logger.getLogger(AsyncHandler.class.getName());
    private final StepRouter router;
    private final WorkerPool workers;
    /** The most content bytes accepted ({@code --max-content}). */
    private final int maxContent;

    /**
     * @param router    the routes (the demo's endpoints)
     * @param workers   the request queue, its worker threads and the delay timer
     * @param maxContent the most content bytes accepted ({@code --max-content})
     */
    AsyncHandler(StepRouter router, WorkerPool workers, int maxContent) {
        this.router = router;
        this.workers = workers;
        this.maxContent = maxContent;
    }

    @Override
    public void handleRequest(HttpServerExchange exchange) {
        if (Exchanges.refuseUnsupportedVersion(exchange) || Exchanges.refuseContent(exchange, maxContent)) return;
        // dispatch() keeps the exchange open after this method returns; with SameThreadExecutor the
        // task runs on this IO thread right after the handler chain unwinds, so no worker can touch
        // the exchange while Undertow's IO thread still does.
        exchange.dispatch(SameThreadExecutor.INSTANCE, () -> workers.queue().execute(() -> serve(exchange)));
    }

    /** On a worker: runs the endpoint, then sends its reply (now, or when the wait ends). */
    private void serve(HttpServerExchange exchange) {
        Exchange<StepHandler> started = router.begin(exchange.getRequestMethod().toString(), Exchanges.rawPath(exchange), exchange.getQueryString());
        workers.run(StepRouter.firstStep(started), reply -> send(exchange, started, reply));
    }

    private static void send(HttpServerExchange exchange, Exchange<StepHandler> started, Reply answer) {
        Reply reply = started.answer(Streaming.unlessStreamed(answer, "undertow-async"));
        try {
            Exchanges.send(exchange, reply);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "could not send the response", e);
            exchange.endExchange();
        }
    }
}

package kiln.undertow;

import java.util.logging.Level;
import java.util.logging.Logger;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.SameThreadExecutor;
import kiln.app.Endpoints;
import kiln.app.Reply;
import kiln.app.WorkerPool;

/**
 * The async mode. Threading rule: the IO thread only parses the request and queues the exchange to
 * the worker threads; it never runs endpoint code. A worker runs the endpoint; reads finish inline,
 * and a request that waits (durable write, {@code /hello} delay) is finished later by a worker
 * again, through {@link WorkerPool#run}. No worker ever blocks: the response goes
 * out through Undertow's non-blocking sender.
 */
final class AsyncHandler implements HttpHandler {
    private static final Logger LOG = Logger.getLogger(AsyncHandler.class.getName());
    private final Endpoints endpoints;
    private final WorkerPool workers;

    /**
     * @param endpoints the endpoint registry, bound to the database
     * @param workers   the request queue, its worker threads and the delay timer
     */
    AsyncHandler(Endpoints endpoints, WorkerPool workers) {
        this.endpoints = endpoints;
        this.workers = workers;
    }

    @Override
    public void handleRequest(HttpServerExchange exchange) {
        if (Exchanges.refuseUnsupportedVersion(exchange) || Exchanges.refuseContent(exchange)) return;
        // dispatch() keeps the exchange open after this method returns; with SameThreadExecutor the
        // task runs on this IO thread right after the handler chain unwinds, so no worker can touch
        // the exchange while Undertow's IO thread still does.
        exchange.dispatch(SameThreadExecutor.INSTANCE, () -> workers.queue().execute(() -> serve(exchange)));
    }

    /** On a worker: runs the endpoint, then sends its reply (now, or when the wait ends). */
    private void serve(HttpServerExchange exchange) {
        Endpoints.Exchange started = endpoints.exchange(exchange.getRequestMethod().toString(), Exchanges.rawPath(exchange), exchange.getQueryString());
        workers.run(started.step, reply -> send(exchange, started, reply));
    }

    private static void send(HttpServerExchange exchange, Endpoints.Exchange started, Reply reply) {
        started.sent(reply);
        try {
            Exchanges.send(exchange, reply);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "could not send the response", e);
            exchange.endExchange();
        }
    }
}

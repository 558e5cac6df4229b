package kiln.undertow;

import java.util.concurrent.Executor;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.SameThreadExecutor;
import kiln.app.AsyncEndpoints;

/**
 * The async mode. Threading rule: the IO thread only parses the request and queues the exchange to
 * the worker threads; it never runs endpoint code. A worker runs the endpoint; reads finish inline,
 * and a request that waits (durable write, {@code /hello} delay) is finished later by a worker
 * again, through {@link AsyncEndpoints.Waits#nonBlocking}. No worker ever blocks: the response goes
 * out through Undertow's non-blocking sender.
 */
final class AsyncHandler implements HttpHandler {
    private static final Logger LOG = Logger.getLogger(AsyncHandler.class.getName());
    private final AsyncEndpoints endpoints;
    private final Executor workers;

    /**
     * @param endpoints built with {@link AsyncEndpoints.Waits#nonBlocking} on {@code workers}
     * @param workers   the request queue and its worker threads
     */
    AsyncHandler(AsyncEndpoints endpoints, Executor workers) {
        this.endpoints = endpoints;
        this.workers = workers;
    }

    @Override
    public void handleRequest(HttpServerExchange exchange) {
        if (Exchanges.refuseUnsupportedVersion(exchange) || Exchanges.refuseContent(exchange)) return;
        // dispatch() keeps the exchange open after this method returns; with SameThreadExecutor the
        // task runs on this IO thread right after the handler chain unwinds, so no worker can touch
        // the exchange while Undertow's IO thread still does.
        exchange.dispatch(SameThreadExecutor.INSTANCE, () -> workers.execute(() -> serve(exchange)));
    }

    /** On a worker: runs the endpoint, then sends its reply (now, or when the wait ends). */
    private void serve(HttpServerExchange exchange) {
        endpoints.handle(exchange.getRequestMethod().toString(), exchange.getRequestPath(), exchange.getQueryString())
            .thenAccept(reply -> Exchanges.send(exchange, reply))
            .exceptionally(failure -> {
                // A reply that cannot be sent would otherwise vanish inside the CompletionStage.
                LOG.log(Level.WARNING, "could not send the response", failure);
                exchange.endExchange();
                return null;
            });
    }
}

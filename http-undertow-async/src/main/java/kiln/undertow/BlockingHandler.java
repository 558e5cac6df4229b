package kiln.undertow;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import kiln.app.AsyncEndpoints;
import kiln.app.Reply;

/**
 * The blocking baseline: each request moves from the IO thread to one of Undertow's worker pool
 * threads and holds it from start to end; the thread blocks on a durable write ({@code join()})
 * and sleeps through a {@code /hello} delay, because {@link AsyncEndpoints.Waits#blocking} waits
 * that way. Concurrency is therefore bounded by the worker pool size.
 */
final class BlockingHandler implements HttpHandler {
    private final AsyncEndpoints endpoints;

    /** @param endpoints built with {@link AsyncEndpoints.Waits#blocking} */
    BlockingHandler(AsyncEndpoints endpoints) {
        this.endpoints = endpoints;
    }

    @Override
    public void handleRequest(HttpServerExchange exchange) {
        if (exchange.isInIoThread()) {
            if (Exchanges.refuseUnsupportedVersion(exchange) || Exchanges.refuseContent(exchange)) return;
            // Never block an IO thread: run this handler again on the worker pool.
            exchange.dispatch(this);
            return;
        }
        // Already complete: Waits.blocking() waited on this thread.
        Reply reply = endpoints.handle(exchange.getRequestMethod().toString(), exchange.getRequestPath(), exchange.getQueryString())
            .toCompletableFuture().join();
        Exchanges.send(exchange, reply);
    }
}

package kiln.undertow;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import kiln.app.Endpoints;
import kiln.app.Reply;
import kiln.app.Step;

/**
 * The blocking baseline: each request moves from the IO thread to one of Undertow's worker pool
 * threads and holds it from start to end; the thread blocks on a durable write and sleeps through
 * a {@code /hello} delay ({@link Step#runBlocking}). Concurrency is therefore bounded by the worker
 * pool size. (Not Undertow's own {@code BlockingHandler}, which only starts blocking I/O.)
 */
final class ThreadPerRequestHandler implements HttpHandler {
    private final Endpoints endpoints;

    /** @param endpoints the endpoint registry, bound to the database */
    ThreadPerRequestHandler(Endpoints endpoints) {
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
        Reply reply = Step.runBlocking(
            endpoints.start(exchange.getRequestMethod().toString(), Exchanges.rawPath(exchange), exchange.getQueryString()));
        Exchanges.send(exchange, reply);
    }
}

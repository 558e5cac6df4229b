package kiln.undertow;

import java.util.logging.Level;
import java.util.logging.Logger;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Methods;
import io.undertow.util.SameThreadExecutor;
import kiln.http.Response;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.server.OpenStreams;
import kiln.server.RequestContent;
import kiln.server.WorkerPool;

/**
 * The async mode. Threading rule: the IO thread only parses the request and queues the exchange to
 * the worker threads; it never runs endpoint code. A worker runs the endpoint; reads finish inline,
 * and a request that waits (durable write, {@code /hello} delay) is finished later by a worker
 * again, through {@link WorkerPool#run}. No worker ever blocks: the content comes in through
 * Undertow's {@code Receiver}, the response goes out through its non-blocking sender, and a streamed
 * body through its response channel ({@link ChannelStream}), its waits and heartbeats in callbacks
 * ({@link OpenStreams#runAsync}).
 */
final class AsyncHandler implements HttpHandler {
    private static final Logger LOG = Logger.getLogger(AsyncHandler.class.getName());
    private final StepRouter router;
    private final WorkerPool workers;
    private final OpenStreams streams;
    /** The most content bytes accepted ({@code --max-content}). */
    private final int maxContent;
    /** The request memory and deadlines a request's content is read, and its reply written, within. */
    private final Exchanges.Reading limits;

    /**
     * @param router     the routes (an app's: the demo's endpoints, the board)
     * @param workers    the request queue, its worker threads and the timer (delays, heartbeats)
     * @param streams    the server's open streams: ended at a stop
     * @param maxContent the most content bytes accepted ({@code --max-content})
     * @param limits     the request memory and deadlines a request's content is read, and its reply written, within
     */
    AsyncHandler(StepRouter router, WorkerPool workers, OpenStreams streams, int maxContent, Exchanges.Reading limits) {
        this.router = router;
        this.workers = workers;
        this.streams = streams;
        this.maxContent = maxContent;
        this.limits = limits;
    }

    @Override
    public void handleRequest(HttpServerExchange exchange) {
        if (Exchanges.refuseUnsupportedVersion(exchange) || Exchanges.refuseContent(exchange, maxContent)) return;
        // The content is read on this IO thread as it arrives (Undertow's Receiver), then:
        // dispatch() keeps the exchange open after this method returns; with SameThreadExecutor the
        // task runs on this IO thread right after the handler chain unwinds (or at once, when the
        // content came later), so no worker can touch the exchange while Undertow's IO thread still does.
        Exchanges.readContent(exchange, limits, (content, held) ->
            exchange.dispatch(SameThreadExecutor.INSTANCE, () -> workers.queue().execute(() -> serve(exchange, content, held))));
    }

    /** On a worker: runs the endpoint, then sends its reply (now, or when the wait ends); {@code held} is released then. */
    private void serve(HttpServerExchange exchange, byte[] content, RequestContent held) {
        Exchange<StepHandler> started = Exchanges.begin(router, exchange, content);
        workers.run(StepRouter.firstStep(started), reply -> {
            if (held != null) held.release();
            send(exchange, started, reply);
        });
    }

    private void send(HttpServerExchange exchange, Exchange<StepHandler> started, Response answer) {
        Response reply = started.respond(answer);
        boolean streaming = false;
        try {
            if (reply.stream != null && !Methods.HEAD.equals(exchange.getRequestMethod())) {
                Exchanges.head(exchange, reply);
                streaming = true;
                streams.runAsync(reply.stream, new ChannelStream(exchange), started.request().routeName(), workers.queue(), workers.timer());
                return;
            }
            Exchanges.send(exchange, reply, limits.deadlines());
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "could not send the response", e);
            if (!streaming) OpenStreams.notSent(reply);
            exchange.endExchange();
        }
    }
}

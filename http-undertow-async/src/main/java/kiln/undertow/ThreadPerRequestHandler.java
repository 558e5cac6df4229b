package kiln.undertow;

import java.io.IOException;
import java.io.OutputStream;

import io.undertow.connector.PooledByteBuffer;
import io.undertow.server.AbstractServerConnection;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Methods;
import kiln.http.Response;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.OpenStreams;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.http.StreamEnd;
import org.xnio.IoUtils;
import org.xnio.channels.StreamSourceChannel;

/**
 * The blocking baseline: each request moves from the IO thread to one of Undertow's worker pool
 * threads and holds it from start to end; the thread blocks on a durable write and sleeps through
 * a {@code /hello} delay ({@link Step#runBlocking}). Concurrency is therefore bounded by the worker
 * pool size. (Not Undertow's own {@code BlockingHandler}, which only starts blocking I/O.) A
 * request's content is read on the IO thread first ({@link Exchanges#readContent}), so that a client
 * whose content never comes holds no worker, only its deadline.
 *
 * <p>A request waits in the pool's queue while every worker is busy, and its client may give up
 * meanwhile. Undertow does not read a connection while its request is being handled, so it never
 * sees that client go: the queued request would still run (a {@code /hello?delay=1000} holds a
 * worker for a second) and delay every request behind it. A worker therefore first looks whether
 * the client is still there ({@link #clientGone}) and drops the request, closing the connection,
 * when it is not.
 */
final class ThreadPerRequestHandler implements HttpHandler {
    private final StepRouter router;
    private final OpenStreams streams;
    /** The most content bytes accepted ({@code --max-content}). */
    private final int maxContent;
    /** The request memory and deadlines a request's content is read, and its response written, within. */
    private final Exchanges.Reading limits;

    /**
     * @param router     the routes (an app's: the demo's endpoints, the board)
     * @param streams    the server's open streams: ended at a stop
     * @param maxContent the most content bytes accepted ({@code --max-content})
     * @param limits     the request memory and deadlines a request's content is read, and its response written, within
     */
    ThreadPerRequestHandler(StepRouter router, OpenStreams streams, int maxContent, Exchanges.Reading limits) {
        this.router = router;
        this.streams = streams;
        this.maxContent = maxContent;
        this.limits = limits;
    }

    @Override
    public void handleRequest(HttpServerExchange exchange) {
        if (Exchanges.refuseUnsupportedVersion(exchange) || Exchanges.refuseContent(exchange, maxContent)) return;
        // Never block an IO thread: once the content is in, the request runs on the worker pool.
        Exchanges.readContent(exchange, limits, (content, held) -> exchange.dispatch(() -> {
            try {
                serve(exchange, content);
            } catch (IOException e) {
                IoUtils.safeClose(exchange.getConnection());
                exchange.endExchange();
            } finally {
                if (held != null) held.release();
            }
        }));
    }

    /** On a worker: runs the request, blocking in its waits, and writes the response. */
    private void serve(HttpServerExchange exchange, byte[] content) throws IOException {
        // A request with content was sent just now: the client is there.
        if (content.length == 0 && clientGone(exchange)) {
            IoUtils.safeClose(exchange.getConnection());
            exchange.endExchange();
            return;
        }
        Exchange<StepHandler> started = Exchanges.begin(router, exchange, content);
        Response response = started.respond(Step.runBlocking(StepRouter.firstStep(started)));
        if (response.stream == null || Methods.HEAD.equals(exchange.getRequestMethod())) {
            Exchanges.send(exchange, response, limits.deadlines());
        } else {
            stream(exchange, response, started.request().routeName());
        }
    }

    /**
     * Sends a streamed body on this worker thread, which parks between parts and blocks in each write
     * ({@link OpenStreams#runBlocking}): each part one flush of Undertow's blocking output, so one
     * chunk. Every subscriber holds one of the worker pool's threads, the blocking baseline's cost.
     * A write that outlives its deadline (a client that does not read) is cut by closing the
     * connection ({@link OpenStreams.BlockingSink#cut}).
     */
    private void stream(HttpServerExchange exchange, Response response, String name) throws IOException {
        OutputStream out;
        try {
            Exchanges.head(exchange, response);
            if (!exchange.isBlocking()) exchange.startBlocking();
            out = exchange.getOutputStream();
        } catch (RuntimeException e) {
            OpenStreams.notSent(response);
            throw e;
        }
        String reason = streams.runBlocking(response.stream, new OpenStreams.BlockingSink() {
            private ClientWatch watch;

            @Override
            public void part(byte[] bytes, int length) throws IOException {
                out.write(bytes, 0, length);
                out.flush();  // the first, with no bytes, sends the head at once
            }

            @Override
            public void cut() {
                IoUtils.safeClose(exchange.getConnection());  // the blocked write fails
            }

            @Override
            public void watchClient(Runnable left) {
                watch = ClientWatch.start(exchange, left);  // left unparks this thread
            }

            @Override
            public void stopWatching() {
                if (watch != null) watch.stopAndWait();  // before the return ends the exchange
            }
        }, name);
        // without the last chunk: the client sees a cut body
        if (StreamEnd.cut(reason)) IoUtils.safeClose(exchange.getConnection());
        exchange.endExchange();  // the last chunk; a dispatched Runnable's return does not end the exchange
    }

    /**
     * Reads the connection without waiting: end of stream (the client closed: a client that only
     * half-closes and waits for the answer is treated as gone, as nginx does) or a reset means
     * the client is gone. Bytes it already sent for its next request (pipelining) are handed back
     * to Undertow, which parses them once this exchange ends, as it does with bytes it read ahead
     * itself. When Undertow holds read-ahead bytes already, the client was there recently and the
     * connection is left alone: new bytes must not go before them. Reading here is what Undertow
     * itself does from a worker thread when it resumes a pipelined connection; reads are suspended
     * while the exchange runs, so no IO thread reads at the same time.
     *
     * @return true when the client is gone and the request should not run
     */
    static boolean clientGone(HttpServerExchange exchange) {
        if (!(exchange.getConnection() instanceof AbstractServerConnection)) return false;
        AbstractServerConnection connection = (AbstractServerConnection) exchange.getConnection();
        if (!connection.isOpen()) return true;
        if (connection.getExtraBytes() != null) return false;
        StreamSourceChannel source = connection.getChannel().getSourceChannel();
        PooledByteBuffer pooled = connection.getByteBufferPool().allocate();
        boolean keep = false;
        try {
            int read = source.read(pooled.getBuffer());
            if (read < 0) return true;
            if (read > 0) {
                pooled.getBuffer().flip();
                connection.setExtraBytes(pooled);
                keep = true;
            }
            return false;
        } catch (IOException e) {
            return true;
        } finally {
            if (!keep) pooled.close();
        }
    }
}

package kiln.undertow;

import java.io.IOException;

import io.undertow.connector.PooledByteBuffer;
import io.undertow.server.AbstractServerConnection;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import kiln.http.Reply;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.server.Streaming;
import org.xnio.IoUtils;
import org.xnio.channels.StreamSourceChannel;

/**
 * The blocking baseline: each request moves from the IO thread to one of Undertow's worker pool
 * threads and holds it from start to end; the thread blocks on a durable write and sleeps through
 * a {@code /hello} delay ({@link Step#runBlocking}). Concurrency is therefore bounded by the worker
 * pool size. (Not Undertow's own {@code BlockingHandler}, which only starts blocking I/O.)
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
    /** The most content bytes accepted ({@code --max-content}). */
    private final int maxContent;

    /**
     * @param router     the routes (the demo's endpoints)
     * @param maxContent the most content bytes accepted ({@code --max-content})
     */
    ThreadPerRequestHandler(StepRouter router, int maxContent) {
        this.router = router;
        this.maxContent = maxContent;
    }

    @Override
    public void handleRequest(HttpServerExchange exchange) {
        if (exchange.isInIoThread()) {
            if (Exchanges.refuseUnsupportedVersion(exchange) || Exchanges.refuseContent(exchange, maxContent)) return;
            // Never block an IO thread: run this handler again on the worker pool.
            exchange.dispatch(this);
            return;
        }
        if (clientGone(exchange)) {
            IoUtils.safeClose(exchange.getConnection());
            exchange.endExchange();
            return;
        }
        Exchange<StepHandler> started = router.begin(exchange.getRequestMethod().toString(), Exchanges.rawPath(exchange), exchange.getQueryString());
        Reply reply = started.answer(Streaming.unlessStreamed(Step.runBlocking(StepRouter.firstStep(started)), "undertow-blocking"));
        Exchanges.send(exchange, reply);
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

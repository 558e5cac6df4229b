package kiln.jetty;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.logging.Level;
import java.util.logging.Logger;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.http.Response;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.ClientDeadlines;
import kiln.server.OpenStreams;
import kiln.server.RequestContent;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.server.WorkerPool;
import org.eclipse.jetty.ee10.servlet.HttpOutput;
import org.eclipse.jetty.ee10.servlet.ServletContextResponse;
import org.eclipse.jetty.util.Callback;

/**
 * The async mode. Threading rule: Jetty's threads only parse requests and call
 * {@link #service}, which starts async processing, reads the request's content with a
 * {@code ReadListener} ({@link Content#readAsync}), queues the request to the worker threads and
 * returns at once. A worker runs the endpoint; reads finish inline, and a request that waits
 * (durable write, {@code /hello} delay) is finished later by a worker again, through
 * {@link WorkerPool#run}. No worker ever blocks: the response body goes out with
 * Jetty's non-blocking {@link HttpOutput#sendContent(ByteBuffer, Callback)}, whose callback
 * completes the {@link AsyncContext}, and a streamed body with a {@code WriteListener}
 * ({@link AsyncStream}), its waits and heartbeats in callbacks ({@link OpenStreams#runAsync}).
 */
final class AsyncServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = Logger.getLogger(AsyncServlet.class.getName());

    private final transient StepRouter router;
    private final transient WorkerPool workers;
    private final transient OpenStreams streams;
    /** The most content bytes accepted ({@code --max-content}). */
    private final int maxContent;
    /** The request memory and deadlines a request's content is read within. */
    private final transient Content.Limits limits;

    /**
     * @param router     the routes (an app's: the demo's endpoints, the board)
     * @param workers    the request queue, its worker threads and the timer (delays, heartbeats)
     * @param streams    the server's open streams: ended at a stop
     * @param maxContent the most content bytes accepted ({@code --max-content})
     * @param limits     the request memory and deadlines a request's content is read within
     */
    AsyncServlet(StepRouter router, WorkerPool workers, OpenStreams streams, int maxContent, Content.Limits limits) {
        this.router = router;
        this.maxContent = maxContent;
        this.workers = workers;
        this.streams = streams;
        this.limits = limits;
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        // A refused request is answered here, on Jetty's thread: a small write, no queue, no database.
        if (Responses.refused(request, response, maxContent)) return;
        AsyncContext async = request.startAsync();
        // No async timeout: every queued request ends by itself (the database completes or fails
        // every write, the timer fires every delay, a stream ends at a stop or a failed write);
        // Jetty's idle timeout still ends dead connections.
        async.setTimeout(0);
        if (Content.length(request) == 0) {
            workers.queue().execute(() -> serve(async, Content.NONE, null));
            return;
        }
        Content.readAsync(request, limits, (content, held) -> workers.queue().execute(() -> serve(async, content, held)), failure -> {
            LOG.log(Level.FINE, "request content not read (client gone, too slow, or no memory for it)", failure);
            async.complete();
        });
    }

    /** On a worker: runs the endpoint, then sends its reply (now, or when the wait ends); {@code held} is released then. */
    private void serve(AsyncContext async, byte[] content, RequestContent held) {
        HttpServletRequest request = (HttpServletRequest) async.getRequest();
        Exchange<StepHandler> exchange = router.begin(request.getMethod(), request.getRequestURI(), request.getQueryString(),
            Responses.headers(request), content, Content.remote(request));
        workers.run(StepRouter.firstStep(exchange), reply -> {
            if (held != null) held.release();
            send(async, request, exchange, reply);
        });
    }

    private void send(AsyncContext async, HttpServletRequest request, Exchange<StepHandler> exchange, Response answer) {
        Response reply = exchange.respond(answer);
        boolean streaming = false;
        try {
            HttpServletResponse response = (HttpServletResponse) async.getResponse();
            Responses.head(request, response, reply);
            if (reply.stream != null && !"HEAD".equals(request.getMethod())) {
                streaming = true;
                streams.runAsync(reply.stream, new AsyncStream(async), exchange.request().routeName(), workers.queue(), workers.timer());
                return;
            }
            HttpOutput out = ServletContextResponse.getServletContextResponse(response).getHttpOutput();
            ClientDeadlines.Wait writing = limits.deadlines().write(reply.body.length, () -> Content.endPoint(request).close());
            out.sendContent(ByteBuffer.wrap(reply.body), Callback.from(() -> {
                writing.end();
                async.complete();
            }, failure -> {
                writing.end();
                LOG.log(Level.FINE, "response not sent (client gone, or it did not read)", failure);
                async.complete();
            }));
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.FINE, "response not sent (client gone?)", e);
            if (!streaming) OpenStreams.notSent(reply);
            async.complete();
        }
    }
}

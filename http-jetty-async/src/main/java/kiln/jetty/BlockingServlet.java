package kiln.jetty;

import java.io.IOException;
import java.util.concurrent.Executor;
import java.util.logging.Level;
import java.util.logging.Logger;

import jakarta.servlet.AsyncContext;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.http.BodyStream;
import kiln.http.Response;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.OpenStreams;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.http.StreamEnd;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;

/**
 * The blocking baseline: the classic servlet. Each request holds one of Jetty's pool threads from
 * start to end; the thread blocks on a durable write and sleeps through a {@code /hello} delay
 * ({@link Step#runBlocking}). Concurrency is therefore bounded by the pool size. A request's content
 * is read before: without a thread (servlet async I/O, {@link Content#readAsync}), so that a client
 * whose content never comes holds no thread, only its deadline; then the request runs on
 * {@code runner} (Jetty's pool, or a virtual thread in loom mode), as a thread of its own would.
 */
final class BlockingServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = Logger.getLogger(BlockingServlet.class.getName());

    private final transient StepRouter router;
    /** The most content bytes accepted ({@code --max-content}). */
    private final int maxContent;
    /** The server's open streams: ended at a stop. */
    private final transient OpenStreams streams;
    /** The request memory and deadlines a request's content is read within. */
    private final transient Content.Limits limits;
    /** Runs a request once its content is in: the thread that would have served it. */
    private final transient Executor runner;

    /**
     * @param router     the routes (an app's: the demo's endpoints, the board)
     * @param streams    the server's open streams
     * @param maxContent the most content bytes accepted ({@code --max-content})
     * @param limits     the request memory and deadlines a request's content is read within
     * @param runner     runs a request with content once it is in (Jetty's pool; loom mode: a virtual thread each)
     */
    BlockingServlet(StepRouter router, OpenStreams streams, int maxContent, Content.Limits limits, Executor runner) {
        this.router = router;
        this.streams = streams;
        this.maxContent = maxContent;
        this.limits = limits;
        this.runner = runner;
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (Responses.refused(request, response, maxContent)) return;
        if (Content.length(request) == 0) {
            serve(request, response, Content.NONE);
            return;
        }
        AsyncContext async = request.startAsync();
        async.setTimeout(0);  // the content's own deadline ends a client that stops sending
        Content.readAsync(request, limits, (content, held) -> runner.execute(() -> {
            boolean aborted = false;
            try {
                aborted = serve(request, response, content);
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.FINE, "response not sent (client gone?)", e);
            } finally {
                held.release();
                if (!aborted) async.complete();  // an aborted response is completed by Jetty
            }
        }), failure -> async.complete());
    }

    /**
     * Runs the request on this thread, blocking in its waits, and writes the reply.
     *
     * @return true when a streamed body was cut: the response is aborted, and Jetty completes it
     */
    private boolean serve(HttpServletRequest request, HttpServletResponse response, byte[] content) throws IOException {
        Exchange<StepHandler> exchange = router.begin(request.getMethod(), request.getRequestURI(), request.getQueryString(),
            Responses.headers(request), content, Content.remote(request));
        Response reply = exchange.respond(Step.runBlocking(StepRouter.firstStep(exchange)));
        ServletOutputStream out;
        try {
            Responses.head(request, response, reply);
            if (reply.stream != null) response.setBufferSize(OpenStreams.RESPONSE_BUFFER_BYTES);
            out = response.getOutputStream();
            if (reply.stream == null) {
                out.write(reply.body);  // into Jetty's buffer; written at the return, under Jetty's idle timeout
                return false;
            }
            if ("HEAD".equals(request.getMethod())) return false;
            out.flush();  // the head goes out at once
        } catch (IOException | RuntimeException e) {
            OpenStreams.notSent(reply);
            throw e;
        }
        return stream(request, out, reply.stream, exchange.request().routeName());
    }

    /**
     * Sends a streamed body on this thread, which parks between parts ({@link OpenStreams#runBlocking}):
     * each part is one flush, so one chunk (Jetty chunks a body without Content-Length on HTTP/1.1,
     * and ends it with the connection on HTTP/1.0). With {@code --mode loom} the thread is virtual; in
     * blocking mode every subscriber holds a pool thread.
     *
     * @return true when the body was cut: the response is aborted (the connection closes without
     *         the last chunk), and Jetty completes it
     */
    private boolean stream(HttpServletRequest request, ServletOutputStream out, BodyStream body, String name) throws IOException {
        // the servlet's return ends the body: Jetty writes the last chunk
        String reason = streams.runBlocking(body, new OpenStreams.BlockingSink() {
            private ClientWatch watch;

            @Override
            public void part(byte[] bytes, int length) throws IOException {
                if (length == 0) return;
                out.write(bytes, 0, length);
                out.flush();
            }

            @Override
            public void cut() {
                Content.endPoint(request).close();  // the blocked write fails
            }

            @Override
            public void watchClient(Runnable left) {
                watch = ClientWatch.start(request, left);  // left unparks this thread
            }

            @Override
            public void stopWatching() {
                if (watch != null) watch.stop();  // before the response completes
            }
        }, name);
        if (!StreamEnd.cut(reason)) return false;
        // close the connection without the last chunk: the client sees a cut body, not a complete one
        ServletContextRequest.getServletContextRequest(request).getServletChannel().abort(new IOException("streamed body cut: " + reason));
        return true;
    }
}

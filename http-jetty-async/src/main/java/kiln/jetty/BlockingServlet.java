package kiln.jetty;

import java.io.IOException;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.http.BodyStream;
import kiln.http.Reply;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.OpenStreams;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.http.StreamEnd;

/**
 * The blocking baseline: the classic servlet. Each request holds one of Jetty's pool threads from
 * start to end; the thread blocks on a durable write and sleeps through a {@code /hello} delay
 * ({@link Step#runBlocking}). Concurrency is therefore bounded by the pool size.
 */
final class BlockingServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private final transient StepRouter router;
    /** The most content bytes accepted ({@code --max-content}). */
    private final int maxContent;
    /** The server's open streams: counted, and ended at a stop. */
    private final transient OpenStreams streams;

    /**
     * @param router     the routes (an app's: the demo's endpoints, the board)
     * @param streams    the server's open streams
     * @param maxContent the most content bytes accepted ({@code --max-content})
     */
    BlockingServlet(StepRouter router, OpenStreams streams, int maxContent) {
        this.router = router;
        this.streams = streams;
        this.maxContent = maxContent;
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (Responses.refused(request, response, maxContent)) return;
        Exchange<StepHandler> exchange = router.begin(request.getMethod(), request.getRequestURI(), request.getQueryString(),
            Responses.headers(request), Content.readBlocking(request), Content.remote(request));
        Reply reply = exchange.answer(Step.runBlocking(StepRouter.firstStep(exchange)));
        Responses.head(request, response, reply);
        if (reply.stream == null) {
            response.getOutputStream().write(reply.body);
        } else if (!"HEAD".equals(request.getMethod())) {
            stream(response, reply.stream, exchange.request().routeName());
        }
    }

    /**
     * Sends a streamed body on this thread, which parks between parts ({@link OpenStreams#runBlocking}):
     * each part is one flush, so one chunk (Jetty chunks a body without Content-Length on HTTP/1.1,
     * and ends it with the connection on HTTP/1.0). With {@code --mode loom} the thread is virtual; in
     * blocking mode every subscriber holds a pool thread.
     */
    private void stream(HttpServletResponse response, BodyStream body, String name) throws IOException {
        ServletOutputStream out = response.getOutputStream();
        out.flush();  // the head goes out at once
        // the servlet's return ends the body: Jetty writes the last chunk
        String reason = streams.runBlocking(body, (bytes, length) -> {
            if (length == 0) return;
            out.write(bytes, 0, length);
            out.flush();
        }, name);
        // Jetty aborts a response whose servlet threw after committing it: the client sees a cut body, not a complete one
        if (reason.equals(StreamEnd.ERROR)) throw new IOException("the streamed body of " + name + " failed (logged above)");
    }
}

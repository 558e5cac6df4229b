package kiln.jetty;

import java.io.IOException;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.app.AsyncEndpoints;
import kiln.app.Reply;

/**
 * The blocking baseline: the classic servlet. Each request holds one of Jetty's pool threads from
 * start to end; the thread blocks on a durable write ({@code join()}) and sleeps through a
 * {@code /hello} delay, because {@link AsyncEndpoints.Waits#blocking} waits that way. Concurrency is
 * therefore bounded by the pool size.
 */
final class BlockingServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private final transient AsyncEndpoints endpoints;

    /** @param endpoints built with {@link AsyncEndpoints.Waits#blocking} */
    BlockingServlet(AsyncEndpoints endpoints) {
        this.endpoints = endpoints;
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (Responses.refused(request, response)) return;
        // Already complete: Waits.blocking() waited on this thread.
        Reply reply = endpoints.handle(request.getMethod(), request.getRequestURI(), request.getQueryString())
            .toCompletableFuture().join();
        Responses.head(request, response, reply);
        response.getOutputStream().write(reply.body);
    }
}

package kiln.jetty;

import java.io.IOException;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.app.Endpoints;
import kiln.app.Reply;
import kiln.app.Step;

/**
 * The blocking baseline: the classic servlet. Each request holds one of Jetty's pool threads from
 * start to end; the thread blocks on a durable write and sleeps through a {@code /hello} delay
 * ({@link Step#runBlocking}). Concurrency is therefore bounded by the pool size.
 */
final class BlockingServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private final transient Endpoints endpoints;

    /** @param endpoints the endpoint registry, bound to the database */
    BlockingServlet(Endpoints endpoints) {
        this.endpoints = endpoints;
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (Responses.refused(request, response)) return;
        Endpoints.Exchange exchange = endpoints.exchange(request.getMethod(), request.getRequestURI(), request.getQueryString());
        Reply reply = Step.runBlocking(exchange.step);
        exchange.sent(reply);
        Responses.head(request, response, reply);
        response.getOutputStream().write(reply.body);
    }
}

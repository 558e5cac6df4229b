package kiln.jetty;

import java.io.IOException;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.http.Reply;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;

/**
 * The blocking baseline: the classic servlet. Each request holds one of Jetty's pool threads from
 * start to end; the thread blocks on a durable write and sleeps through a {@code /hello} delay
 * ({@link Step#runBlocking}). Concurrency is therefore bounded by the pool size.
 */
final class BlockingServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private final transient StepRouter router;

    /** @param router the routes (the demo's endpoints) */
    BlockingServlet(StepRouter router) {
        this.router = router;
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (Responses.refused(request, response)) return;
        Exchange<StepHandler> exchange = router.begin(request.getMethod(), request.getRequestURI(), request.getQueryString());
        Reply reply = Responses.negotiated(request, exchange.answer(Step.runBlocking(StepRouter.firstStep(exchange))));
        Responses.head(request, response, reply);
        response.getOutputStream().write(reply.body);
    }
}

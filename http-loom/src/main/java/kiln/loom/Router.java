package kiln.loom;

import kiln.http.Response;
import kiln.http.Request;
import kiln.server.AbstractRouter;
import kiln.server.Metrics;
import kiln.server.Step;
import kiln.server.StepHandler;

/**
 * Maps (method, path) to a virtual-thread {@link Handler}, through the pipeline every front end
 * shares ({@link AbstractRouter}): exact paths and templates ({@code /todos/{id}}), HEAD answered by
 * GET, OPTIONS, 404 for an unknown path, 405 with {@code Allow}, the failure policy and the metrics.
 *
 * <pre>{@code
 * Router router = new Router()
 *     .get("/hits", req -> ...)                     // your blocking handlers
 *     .post("/todos", req -> ...);
 * }</pre>
 */
public final class Router extends AbstractRouter<Handler, Router> {
    /** A router that records no metrics (it serves no {@code /metrics}). */
    public Router() {
        this(Metrics.off());
    }

    /**
     * A router whose requests are counted and timed in {@code metrics}, which {@code /metrics} serves:
     * {@code Operations.addTo(new Router(Metrics.create(db)), db)}.
     *
     * @param metrics where every request of every route is counted and timed ({@link Metrics#create},
     *                or {@code ServerOptions.metrics(db)}, which honours {@code --no-metrics})
     */
    public Router(Metrics metrics) {
        super(metrics);
    }

    /** Runs {@code logic}'s {@link Step}s on the connection's virtual thread, which parks in each wait ({@link Step#runBlocking}). */
    @Override
    protected Handler fromSteps(StepHandler logic) {
        return request -> Step.runBlocking(StepHandler.start(logic, request));
    }

    /** Routes {@code request} and runs its handler on this virtual thread (the pipeline of {@link AbstractRouter}). */
    Response dispatch(Request request) {
        Exchange<Handler> x = begin(request);
        if (x.hasResponse()) return x.respond(x.response());
        try {
            return x.respond(x.handler().handle(request));
        } catch (Exception e) {
            return x.fail(e);
        }
    }
}

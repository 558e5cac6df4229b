package kiln.loom;

import kiln.app.DemoDb;
import kiln.app.Endpoint;
import kiln.app.Endpoints;
import kiln.app.Failures;
import kiln.app.Metrics;
import kiln.app.Reply;
import kiln.app.Step;
import kiln.http.AbstractRouter;
import kiln.http.HttpRequest;

/**
 * Maps (method, path) to a virtual-thread {@link Handler}, with the routing every front end shares
 * ({@link AbstractRouter} over {@link kiln.app.Routes}): exact paths and templates
 * ({@code /todos/{id}}), HEAD answered by GET, 404 for an unknown path, 405 with {@code Allow} for
 * a known path asked with another method.
 *
 * <pre>{@code
 * Router router = Router.withEndpoints(DemoDb.open(db))     // the demo endpoints of the registry
 *     .get("/hits", req -> ...);                            // plus your own handlers
 * }</pre>
 */
public final class Router extends AbstractRouter<Handler, Router> {
    /** A router of your own handlers; it records no metrics (it serves no {@code /metrics}). */
    public Router() {
        this(Metrics.off());
    }

    private Router(Metrics metrics) {
        super(metrics);
    }

    /**
     * @return a router serving every endpoint of the registry ({@link Endpoints#ALL}) from
     *         {@code demo}, each run on the connection's virtual thread, which blocks in each wait
     *         ({@link Step#runBlocking}): a durable write or a delay parks it, freeing its carrier
     */
    public static Router withEndpoints(DemoDb demo) {
        return withEndpoints(Endpoints.serve(demo));
    }

    /**
     * As {@link #withEndpoints(DemoDb)}, with the server's metrics ({@code ServerOptions.metrics}):
     * every route of the router, your own too, is counted and timed in them.
     */
    public static Router withEndpoints(DemoDb demo, Metrics metrics) {
        return withEndpoints(Endpoints.serve(demo, metrics));
    }

    private static Router withEndpoints(Endpoints endpoints) {
        Router router = new Router(endpoints.metrics());
        for (Endpoint e : Endpoints.ALL) router.route(e.method, e.path, request -> Step.runBlocking(endpoints.start(e, request)));
        return router;
    }

    /**
     * Runs the handler for {@code request}, or answers 404/405; a handler's exception becomes the
     * failure policy's reply ({@link Failures}). Records the request in the metrics, once.
     */
    Reply dispatch(HttpRequest request) {
        long started = metrics().start();
        Entry<Handler> entry = find(request);
        if (entry == null) return miss(request, started);
        Reply reply;
        try {
            reply = entry.handler.handle(request);
        } catch (Exception e) {
            reply = Failures.toReply(e, request);
        }
        return entry.answered(reply, started);
    }
}

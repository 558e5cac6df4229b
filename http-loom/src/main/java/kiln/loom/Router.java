package kiln.loom;

import kiln.app.DemoDb;
import kiln.app.Endpoint;
import kiln.app.Endpoints;
import kiln.app.Reply;
import kiln.app.Routes;
import kiln.app.Step;
import kiln.http.HttpRequest;

/**
 * Maps (method, path) to a virtual-thread {@link Handler}, with the routing every front end shares
 * ({@link Routes}): exact paths and templates ({@code /todos/{id}}), HEAD answered by GET, 404 for
 * an unknown path, 405 with {@code Allow} for a known path asked with another method.
 *
 * <pre>{@code
 * Router router = Router.withEndpoints(DemoDb.open(db))     // the demo endpoints of the registry
 *     .get("/hits", req -> ...);                            // plus your own handlers
 * }</pre>
 */
public final class Router {
    private final Routes<Handler> routes = new Routes<>();

    /**
     * @return a router serving every endpoint of the registry ({@link Endpoints#ALL}) from
     *         {@code demo}, each run on the connection's virtual thread, which blocks in each wait
     *         ({@link Step#runBlocking}): a durable write or a delay parks it, freeing its carrier
     */
    public static Router withEndpoints(DemoDb demo) {
        Router router = new Router();
        Endpoints endpoints = Endpoints.serve(demo);
        for (Endpoint e : Endpoints.ALL) router.route(e.method, e.path, request -> Step.runBlocking(endpoints.start(e, request)));
        return router;
    }

    /** Registers {@code handler} for GET {@code path}; it answers HEAD too (the body dropped). */
    public Router get(String path, Handler handler) {
        return route("GET", path, handler);
    }

    /** Registers {@code handler} for POST {@code path}. */
    public Router post(String path, Handler handler) {
        return route("POST", path, handler);
    }

    /** Registers {@code handler} for PUT {@code path}. */
    public Router put(String path, Handler handler) {
        return route("PUT", path, handler);
    }

    /** Registers {@code handler} for DELETE {@code path}. */
    public Router delete(String path, Handler handler) {
        return route("DELETE", path, handler);
    }

    /**
     * Registers {@code handler} for {@code method} on {@code path}: an exact path ({@code /todos}) or
     * a template with whole-segment parameters ({@code /todos/{id}}, read with
     * {@code request.pathParam("id")}); no query string. See {@link Routes} for the matching rules.
     *
     * @throws IllegalArgumentException when the route exists already or the path is malformed
     */
    public Router route(String method, String path, Handler handler) {
        routes.add(method, path, handler);
        return this;
    }

    /** Runs the handler for {@code request}, or answers 404/405. */
    Reply dispatch(HttpRequest request) throws Exception {
        Handler handler = request.routeIn(routes);
        if (handler == null) return routes.miss(request.method(), request.path());
        return handler.handle(request);
    }
}

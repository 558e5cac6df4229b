package kiln.http;

import kiln.app.Metrics;
import kiln.app.Reply;
import kiln.app.Routes;

/**
 * What the routers of kiln's own HTTP layer share: a table of handlers of type {@code H} matched by
 * {@link Routes} (exact paths and templates such as {@code /todos/{id}}, HEAD answered by GET, 404
 * for an unknown path, 405 with {@code Allow} for a known path asked with another method), each
 * route with its series in the server's {@link Metrics}.
 *
 * <p>The two routers differ only in how a handler runs: {@code kiln.kilim.Router}'s handlers are
 * pausable and run in the connection's fiber, {@code kiln.loom.Router}'s block the connection's
 * virtual thread. So each writes its own {@code dispatch}, the same steps around that one call:
 * <pre>{@code
 * long started = metrics().start();
 * Entry<Handler> entry = find(request);
 * if (entry == null) return miss(request, started);
 * Reply reply;
 * try { reply = entry.handler.handle(request); } catch (Exception e) { reply = Failures.toReply(e, request); }
 * return entry.answered(reply, started);
 * }</pre>
 *
 * @param <H> the front end's handler type
 * @param <R> the router itself, which the registering methods return for chaining
 */
public abstract class AbstractRouter<H, R extends AbstractRouter<H, R>> {
    private final Routes<Entry<H>> routes = new Routes<>();
    private final Metrics metrics;

    /** @param metrics where every request is counted and timed; {@link Metrics#off()} for none */
    protected AbstractRouter(Metrics metrics) {
        this.metrics = metrics;
    }

    /** Registers {@code handler} for GET {@code path}; it answers HEAD too (the body dropped). */
    public R get(String path, H handler) {
        return route("GET", path, handler);
    }

    /** Registers {@code handler} for POST {@code path}. */
    public R post(String path, H handler) {
        return route("POST", path, handler);
    }

    /** Registers {@code handler} for PUT {@code path}. */
    public R put(String path, H handler) {
        return route("PUT", path, handler);
    }

    /** Registers {@code handler} for DELETE {@code path}. */
    public R delete(String path, H handler) {
        return route("DELETE", path, handler);
    }

    /**
     * Registers {@code handler} for {@code method} on {@code path}: an exact path ({@code /todos}) or
     * a template with whole-segment parameters ({@code /todos/{id}}, read with
     * {@code request.pathParam("id")}); no query string. See {@link Routes} for the matching rules.
     *
     * @throws IllegalArgumentException when the route exists already or the path is malformed
     * @throws IllegalStateException    when the front end cannot run {@code handler} ({@link #check})
     */
    public R route(String method, String path, H handler) {
        check(handler);
        routes.add(method, path, new Entry<>(handler, metrics.route(path)));
        @SuppressWarnings("unchecked") R self = (R) this;
        return self;
    }

    /**
     * Refuses, at registration, a handler the front end could not run; accepts every handler unless
     * overridden.
     *
     * @throws IllegalStateException with what to do instead
     */
    protected void check(H handler) {
    }

    /**
     * @return the metrics this router records every request in ({@link Metrics#off()} for a router
     *         of your own)
     */
    public Metrics metrics() {
        return metrics;
    }

    /**
     * @return the entry of {@code request}'s route (the request then reads its path parameters from
     *         it); null when none matches
     */
    protected final Entry<H> find(HttpRequest request) {
        return request.routeIn(routes);
    }

    /** @return the 404 or 405 for a request {@link #find} matched to no route, recorded in the metrics */
    protected final Reply miss(HttpRequest request, long started) {
        Reply miss = routes.miss(request.method(), request.path());
        metrics.unmatched().record(miss.status, started);
        return miss;
    }

    /** A route's handler and its series in the metrics. */
    protected static final class Entry<H> {
        /** the handler registered for the route */
        public final H handler;
        private final Metrics.Route series;

        Entry(H handler, Metrics.Route series) {
            this.handler = handler;
            this.series = series;
        }

        /**
         * Records the request in the route's series, once.
         *
         * @param started what {@link Metrics#start()} returned when the request started
         * @return {@code reply}
         */
        public Reply answered(Reply reply, long started) {
            series.record(reply.status, started);
            return reply;
        }
    }
}

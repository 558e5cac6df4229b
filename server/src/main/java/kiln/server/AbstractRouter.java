package kiln.server;

import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.HttpException;
import kiln.http.Paths;
import kiln.http.Response;
import kiln.http.Request;
import kiln.http.StreamEnd;
import kiln.http.spi.MemoryBudget;
import kiln.http.spi.Routes;

/**
 * The one request pipeline every front end runs: a table of handlers of type {@code H} matched by
 * {@link Routes} (exact paths and templates such as {@code /todos/{id}}, HEAD answered by GET,
 * OPTIONS answered with {@code Allow}, 404 for an unknown path, 405 with {@code Allow} for a known
 * path asked with another method), the middleware ({@link #filter}: CORS, the access log, request
 * ids, authentication, around every request), errors in the form the request's {@code Accept}
 * prefers, the failure policy ({@link Failures}) and the metrics, recorded once per request.
 *
 * <p>Front ends differ only in how a handler runs and waits, so each says only that. A request goes
 * through {@link #begin}, which routes it, runs the filters' way in and starts its clock, then the front end runs the handler
 * its own way and ends the {@link Exchange} once:
 * <pre>{@code
 * Exchange<Handler> x = router.begin(request);
 * if (x.hasResponse()) return x.respond(x.response());        // 400, 404, 405, OPTIONS, a filter's 401: no handler runs
 * try {
 *     return x.respond(x.handler().handle(request));      // a fiber pauses in it, a thread blocks
 * } catch (Exception e) {
 *     return x.fail(e);                                  // the failure policy's response
 * }
 * }</pre>
 * Handlers written as {@link Step}s (the demo's endpoints, which every front end serves) are
 * registered with {@link #steps}; each router says how its threads run them ({@link #fromSteps}).
 *
 * @param <H> the front end's handler type
 * @param <R> the router itself, which the registering methods return for chaining
 */
public abstract class AbstractRouter<H, R extends AbstractRouter<H, R>> {
    private final Routes<Entry<H>> routes = new Routes<>();
    private final Metrics metrics;
    private final ServerHealth health = new ServerHealth();
    /** The limits the router's server enforces ({@link #limits}); the stream cap and per-client shares are counted here. */
    private volatile ServerLimits limits = ServerLimits.defaults().maxClientConnections(Integer.MAX_VALUE).maxClientStreams(Integer.MAX_VALUE);
    private volatile ClientLimits clients = new ClientLimits(limits);
    private volatile MemoryBudget requestMemory = MemoryBudget.UNLIMITED;
    /** The middleware, outermost first ({@link #filter}); replaced whole when one is added. */
    private volatile Filter[] filters = {};

    /** @param metrics where every request is counted and timed; {@link Metrics#off()} for none */
    protected AbstractRouter(Metrics metrics) {
        this.metrics = metrics;
        metrics.limits(limits, clients, requestMemory);
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
     * Registers logic written as {@link Step}s, which every front end can run (the demo's endpoints
     * are): {@link #fromSteps} says how this router's threads wait in it.
     */
    public R steps(String method, String path, StepHandler logic) {
        return route(method, path, fromSteps(logic));
    }

    /** @return a handler of this front end that runs {@code logic}'s steps, waiting in each its own way */
    protected abstract H fromSteps(StepHandler logic);

    /**
     * Refuses, at registration, a handler the front end could not run; accepts every handler unless
     * overridden.
     *
     * @throws IllegalStateException with what to do instead
     */
    protected void check(H handler) {
    }

    /**
     * Caps the streamed responses (server-sent events) open at once ({@code --max-streams}; default:
     * none but the connection cap): a handler's stream beyond it is answered 503 with
     * {@code Retry-After: 1} instead (an {@code EventSource} reconnects after its retry delay), so a
     * flood of subscribers cannot take every connection a box can hold.
     *
     * @return this router
     */
    public R maxStreams(int n) {
        return limits(limits.maxStreams(n));
    }

    /**
     * Sets the limits of the server this router serves ({@link ServerLimits}): the router counts
     * event streams against the cap and each client address's share, and holds the request memory
     * the front end's connections reserve from ({@link #requestMemory}), both shown on
     * {@code /metrics}. A router made in code has no per-client limits and no memory limit until
     * this is called; every front end's main calls it with the command line's. Call before the server starts.
     *
     * @return this router
     */
    public R limits(ServerLimits limits) {
        this.limits = limits;
        clients = new ClientLimits(limits);
        requestMemory = new MemoryBudget(limits.maxRequestMemory());
        metrics.limits(limits, clients, requestMemory);
        @SuppressWarnings("unchecked") R self = (R) this;
        return self;
    }

    /** @return the limits set by {@link #limits} */
    public ServerLimits serverLimits() {
        return limits;
    }

    /** @return the per-client shares of connections and streams, which the front end's accept loop asks too */
    public ClientLimits clients() {
        return clients;
    }

    /** @return the request memory every connection of the server reserves from before it buffers a request's bytes */
    public MemoryBudget requestMemory() {
        return requestMemory;
    }

    /**
     * Counts a streamed response to {@code request} against the stream cap and its client's share: the
     * response with its body wrapped so that its end gives the count back, or a 503 when either is full.
     */
    private Response countStream(Response response, Request request) {
        InetAddress client = request.remoteAddress() == null ? null : request.remoteAddress().getAddress();
        ClientLimits counts = clients;
        String refusal = counts.streamStarted(client);
        if (refusal != null) return Response.unavailable(refusal);
        metrics.streamStarted();
        return response.withStream(new CountedStream(response.stream, counts, client, metrics));
    }

    /**
     * A streamed body counted open from its answer until it ends ({@link BodyStream#ended}, which
     * every front end's stream loop calls once, and a front end that never sent it calls itself).
     */
    private static final class CountedStream implements BodyStream {
        private final BodyStream body;
        private final ClientLimits counts;
        private final InetAddress client;
        private final Metrics metrics;
        private final AtomicBoolean ended = new AtomicBoolean();

        CountedStream(BodyStream body, ClientLimits counts, InetAddress client, Metrics metrics) {
            this.body = body;
            this.counts = counts;
            this.client = client;
            this.metrics = metrics;
        }

        @Override
        public CompletableFuture<?> poll(BodyOutput out) throws Exception {
            return body.poll(out);
        }

        @Override
        public byte[] heartbeat() {
            return body.heartbeat();
        }

        @Override
        public long heartbeatMillis() {
            return body.heartbeatMillis();
        }

        @Override
        public void ended(String reason) {
            if (!ended.compareAndSet(false, true)) return;
            counts.streamEnded(client);
            metrics.streamEnded(reason);
            body.ended(reason);
        }
    }

    /**
     * Adds middleware that runs around every request of this router, inside the filters added
     * before it ({@link Filter} says in which order they see a request). Add filters before the
     * server starts.
     *
     * @return this router
     */
    public R filter(Filter filter) {
        Filter[] old = filters;
        Filter[] grown = java.util.Arrays.copyOf(old, old.length + 1);
        grown[old.length] = java.util.Objects.requireNonNull(filter, "filter");
        filters = grown;
        @SuppressWarnings("unchecked") R self = (R) this;
        return self;
    }

    /** Puts {@code outer} outside the filters added so far, in their order: the middleware {@link ServerOptions} turns on. */
    void wrap(List<Filter> outer) {
        if (outer.isEmpty()) return;
        List<Filter> all = new java.util.ArrayList<>(outer);
        all.addAll(List.of(filters));
        filters = all.toArray(new Filter[0]);
    }

    /**
     * Tells the middleware of a request kiln's own HTTP layer refused before routing
     * ({@link Filter#refused}): the access log's line for a malformed request. Never throws.
     */
    public final void refused(java.net.InetSocketAddress remote, Response response) {
        for (Filter f : filters) {
            try {
                f.refused(remote, response);
            } catch (RuntimeException e) {
                Failures.toResponse(e, null);  // logged; the refusal goes out as it is
            }
        }
    }

    /** @return the metrics this router records every request in ({@link Metrics#off()} for none) */
    public Metrics metrics() {
        return metrics;
    }

    /** @return the server's own health checks: its front end adds them, a health endpoint reads them */
    public ServerHealth health() {
        return health;
    }

    /**
     * Routes a request parsed by kiln's own layer (its path already in normal form) and starts its
     * clock. Never throws.
     *
     * @return the exchange: a handler to run, or the router's own answer (404, 405, OPTIONS); end it with
     *         {@link Exchange#respond} or {@link Exchange#fail}
     */
    public final Exchange<H> begin(Request request) {
        long started = metrics.start();
        Routes.Route<Entry<H>> route = routes.find(request.method(), request.path());
        if (route == null) return filtered(routes.miss(request.method(), request.path()), request, metrics.unmatched(), null, started);
        request.routed(route.template);
        return filtered(null, request, route.handler.series, route.handler.handler, started);
    }

    /** Runs the filters' {@link Filter#before}: the first that answers replaces the handler (or the router's answer). */
    private Exchange<H> filtered(Response answer, Request request, Metrics.Route series, H handler, long started) {
        Filter[] fs = filters;
        int entered = 0;
        for (; entered < fs.length; entered++) {
            Response early;
            try {
                early = fs[entered].before(request, answer);
            } catch (RuntimeException | Error e) {
                answer = Failures.toResponse(e, request);  // a filter that throws is not entered: its after does not run
                break;
            }
            if (early != null) {
                answer = early;
                entered++;  // the filter that answered sees its answer on the way out
                break;
            }
        }
        return new Exchange<>(this, answer == null ? handler : null, request, series, started, answer, fs, entered);
    }

    /**
     * Routes a method and a raw target with no header fields and no content (for tests, and code
     * that asks the router what it would answer): as {@link #begin(String, String, String, List, byte[],
     * java.net.InetSocketAddress)}. Never throws.
     *
     * @param rawPath  the path as sent (not percent-decoded), or {@code *}
     * @param rawQuery the query without '?', still percent-encoded, or null
     */
    public final Exchange<H> begin(String method, String rawPath, String rawQuery) {
        return begin(method, rawPath, rawQuery, List.of(), new byte[0], null);
    }

    /**
     * Routes a request a server library parsed, whole: what a library front end hands to the
     * pipeline, so that a handler sees the same request on every front end. Its path is put in
     * normal form first ({@link Paths}); a path without one is answered 400. Never throws.
     *
     * @param rawPath  the path as sent (not percent-decoded), or {@code *}
     * @param rawQuery the query without '?', still percent-encoded, or null
     * @param headers  field names and values, alternating, as the library parsed them
     * @param body     the content, read within the server's limit ({@code --max-content}); empty for none
     * @param remote   the client's address, or null when unknown
     */
    public final Exchange<H> begin(String method, String rawPath, String rawQuery, List<String> headers, byte[] body,
                                   java.net.InetSocketAddress remote) {
        String path;
        try {
            path = Paths.normalize(rawPath);
        } catch (HttpException e) {
            Request request = Request.of(method, "/", rawQuery, headers, body).remoteAddress(remote);
            return answered(Response.error(e.status(), e.getMessage()), request, metrics.start());
        }
        return begin(Request.of(method, path, rawQuery, headers, body).remoteAddress(remote));
    }

    private Exchange<H> answered(Response response, Request request, long started) {
        return filtered(response, request, metrics.unmatched(), null, started);
    }

    /** A route's handler and its series in the metrics. */
    private static final class Entry<H> {
        final H handler;
        final Metrics.Route series;

        Entry(H handler, Metrics.Route series) {
            this.handler = handler;
            this.series = series;
        }
    }

    /**
     * One request between {@link #begin} and its response: the handler to run, or the router's own
     * answer. The front end ends it once, with {@link #respond} or {@link #fail}, which record it in
     * the metrics. Not thread-safe: one request, one thread at a time.
     *
     * @param <H> the front end's handler type
     */
    public static final class Exchange<H> {
        private final AbstractRouter<H, ?> router;
        private final H handler;
        private final Request request;
        private final Metrics.Route series;
        private final long started;
        private final Response response;
        /** The filters whose {@link Filter#before} ran, in {@code filters[0..entered)}: their {@link Filter#after} run in reverse. */
        private final Filter[] filters;
        private final int entered;

        Exchange(AbstractRouter<H, ?> router, H handler, Request request, Metrics.Route series, long started, Response response,
                 Filter[] filters, int entered) {
            this.router = router;
            this.handler = handler;
            this.request = request;
            this.series = series;
            this.started = started;
            this.response = response;
            this.filters = filters;
            this.entered = entered;
        }

        /**
         * Whether the exchange is answered already, before any handler: check it first,
         * {@code if (x.hasResponse()) return x.respond(x.response());}.
         *
         * @return true when the router or a filter answered (404, 405, OPTIONS, a malformed path, a
         *         CORS preflight, a 401): run no handler, send {@link #response()}
         */
        public boolean hasResponse() {
            return response != null;
        }

        /**
         * The answer the router or a filter gave, when {@link #hasResponse()}.
         *
         * @return the router's own answer, to send with {@link #respond}; null when a handler is to run
         */
        public Response response() {
            return response;
        }

        /**
         * The handler to run, the front end's way: {@code x.respond(x.handler().handle(request))}.
         *
         * @return the matched route's handler; null when {@link #hasResponse()}
         */
        public H handler() {
            return handler;
        }

        /** @return the request, routed: {@link Request#pathParam} reads the route's template */
        public Request request() {
            return request;
        }

        /**
         * Ends the exchange: a streamed response is counted open until its body ends, and answered 503
         * instead when the router's stream cap ({@link #maxStreams}) or its client's share
         * ({@link ServerLimits#maxClientStreams}) is full; an error takes the form the request's
         * {@code Accept} prefers ({@link Response#negotiated}); the filters' {@link Filter#after} see
         * the response, innermost first; the request is recorded with the final status and its
         * duration, once (404s and 405s under the endpoint label {@value Metrics#UNMATCHED}).
         *
         * <p>A front end that cannot send a streamed response this returns (its client left first) ends
         * its body itself: {@code response.stream.ended(StreamEnd.CLIENT)}, so that it is counted closed.
         *
         * @return the response to send: {@code response}, the 503 that replaces it, or what the filters made of it
         */
        public Response respond(Response response) {
            BodyStream counted = null;
            if (response.stream != null && !"HEAD".equals(request.method())) {
                response = router.countStream(response, request);
                counted = response.stream;
            }
            if (response.status >= 400) response = response.negotiated(request.header("Accept"));
            for (int i = entered - 1; i >= 0; i--) {
                try {
                    response = filters[i].after(request, response);
                } catch (RuntimeException | Error e) {
                    response = Failures.toResponse(e, request);
                }
            }
            if (counted != null && response.stream == null) counted.ended(StreamEnd.COMPLETE);  // a filter replaced the stream
            series.record(response.status, started);
            return response;
        }

        /**
         * Ends the exchange with what the handler threw, or its awaited future failed with:
         * {@code catch (Exception e) { return x.fail(e); }}. As {@link #respond} with the failure
         * policy's answer (an {@code HttpException}'s status, a database error's, else 500 and a log line).
         *
         * @param failure what the handler threw
         * @return the failure policy's response to {@code failure} ({@link Failures#toResponse}), recorded
         */
        public Response fail(Throwable failure) {
            return respond(Failures.toResponse(failure, request));
        }

        @Override
        public String toString() {
            return request.routeName() + (response != null ? " -> " + response.status : "");
        }
    }
}

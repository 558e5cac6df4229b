package kiln.app;

import java.nio.charset.StandardCharsets;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import org.owasp.encoder.Encode;

/**
 * The endpoint registry: every endpoint kiln serves, written once. Every front end serves exactly
 * these ({@link #serve}); the index page ({@code /}), every {@code --help} ({@link #usage}) and the
 * conformance suite's walk are derived from {@link #ALL}. A served registry carries the server's
 * {@link Metrics}, which {@code /metrics} answers and the front end records each request in. To add an endpoint, add its entry here,
 * a test, and its line in the README's endpoint table.
 *
 * <p>Test types and rules: TechEmpower Framework Benchmarks, "Project Information / Framework Tests
 * Overview" (test types 1-7).
 */
public final class Endpoints {
    /** Every endpoint, in the order the index page and {@code --help} list them. */
    public static final List<Endpoint> ALL = List.of(
        get("/", "/", "this page: a link to every endpoint",
            (demo, metrics) -> {
                Step page = Step.of(Reply.ok(Http.TEXT_HTML, indexPage()));
                return request -> page;
            }),
        get("/plaintext", "/plaintext", "Hello, World! as text",
            (demo, metrics) -> {
                Step plaintext = Step.of(Reply.ok(Http.TEXT_PLAIN, Bodies.PLAINTEXT));  // immutable: one for every request
                return request -> plaintext;
            }),
        get("/json", "/json", "a JSON message",
            (demo, metrics) -> request -> Step.of(Reply.ok(Http.APPLICATION_JSON, Bodies.helloJson()))),
        get("/db", "/db", "one random World row",
            (demo, metrics) -> request -> Step.of(fresh(Reply.json(demo.readRandomWorld())))),
        get("/worlds/{id}", "/worlds/42", "the World row with that id (1..10000)",
            (demo, metrics) -> request -> {
                int id = Params.worldId(request.pathParam("id"));
                return Step.of(fresh(Reply.json(demo.readWorld(id))));
            }),
        get("/queries?queries=N", "/queries?queries=20", "N random rows (1..500)",
            (demo, metrics) -> request -> Step.of(fresh(Reply.json(demo.readRandomWorlds(Params.queries(request.param("queries"))))))),
        get("/updates?queries=N", "/updates?queries=20", "N rows updated durably",
            (demo, metrics) -> request -> {
                World[] rows = demo.readRandomWorlds(Params.queries(request.param("queries")));
                return Step.after(demo.db().write(demo.updateWithNewRandomNumbers(rows)),
                    updated -> Step.of(fresh(Reply.json(updated))));  // answered once the commit is durable
            }),
        get("/cached-queries?count=N", "/cached-queries?count=20", "N random rows from an in-memory cache (1..500)",
            (demo, metrics) -> {
                // TechEmpower test type 7: the World table held in memory, read once when the server starts
                World[] byId = new World[DemoDb.WORLD_ROWS + 1];
                demo.db().read(txn -> demo.worlds().scan(txn, (id, number) -> {
                    byId[id] = new World(id, number);
                    return true;
                })).join();
                return request -> {
                    World[] rows = new World[Params.queries(request.param("count"))];
                    for (int i = 0; i < rows.length; i++) rows[i] = byId[DemoDb.randomId()];
                    return Step.of(fresh(Reply.json(rows)));
                };
            }),
        get("/fortunes", "/fortunes", "the fortunes table as HTML",
            (demo, metrics) -> request -> Step.of(fresh(Reply.ok(Http.TEXT_HTML, Bodies.fortunesHtml(demo.readFortunes()))))),
        get("/hello?delay=MS", "/hello?delay=100", "HelloWorld after an asynchronous sleep",
            (demo, metrics) -> {
                Step hello = Step.of(Reply.ok(Http.TEXT_PLAIN, Bodies.HELLO));
                return request -> {
                    int ms = Params.delayMs(request.param("delay"));
                    return ms == 0 ? hello : Step.afterSleep(ms, () -> hello);
                };
            }),
        get("/healthz", "/healthz", "200 ok while the database answers reads and its writer runs, else 503",
            (demo, metrics) -> request -> Step.of(fresh(Health.check(demo)))),
        get("/metrics", "/metrics", "Prometheus metrics: requests, latency, connections, the database, the JVM",
            (demo, metrics) -> request -> Step.of(fresh(metrics.reply()))));

    private final Routes<Bound> routes = new Routes<>();
    private final Map<Endpoint, Bound> bound = new IdentityHashMap<>();
    private final Metrics metrics;

    private Endpoints(DemoDb demo, Metrics metrics) {
        this.metrics = metrics;
        for (Endpoint e : ALL) {
            Bound b = new Bound(e.binding.bind(demo, metrics), metrics.route(e.path));
            routes.add(e.method, e.path, b);
            bound.put(e, b);
        }
    }

    /**
     * @return every endpoint of {@link #ALL}, bound to {@code demo}, ready to answer requests, with
     *         metrics ({@link Metrics#create})
     */
    public static Endpoints serve(DemoDb demo) {
        return new Endpoints(demo, Metrics.create(demo.db()));
    }

    /**
     * @param metrics the server's metrics: {@link Metrics#create}, or {@link Metrics#off()} for
     *                {@code --no-metrics} ({@link ServerOptions#metrics})
     * @return every endpoint of {@link #ALL}, bound to {@code demo}, ready to answer requests
     */
    public static Endpoints serve(DemoDb demo, Metrics metrics) {
        return new Endpoints(demo, metrics);
    }

    /** @return the metrics {@code /metrics} answers: record each request in them, give them the open connections */
    public Metrics metrics() {
        return metrics;
    }

    /**
     * Routes a request and runs its endpoint's logic up to its first wait, for a front end whose
     * server library parsed the request. Never throws: an unknown path is 404, another method 405,
     * and a failure the failure policy's reply ({@link Failures}). Records nothing in the metrics:
     * a front end calls {@link #exchange} instead.
     *
     * @param rawPath  the request path as sent (not percent-decoded), or {@code *}; routed in its
     *                 normal form ({@link Paths#normalize}: 400 when it has none)
     * @param rawQuery the query without '?', still percent-encoded, or null
     * @return the reply, or a wait to run with the front end's way of waiting ({@link Step})
     */
    public Step start(String method, String rawPath, String rawQuery) {
        String path;
        try {
            path = Paths.normalize(rawPath);
        } catch (HttpException e) {
            return Step.of(Reply.error(e.status(), e.getMessage()));
        }
        Routes.Route<Bound> route = routes.find(method, path);
        if (route == null) return Step.of(routes.miss(method, path));
        return start(route.handler, new SimpleRequest(method, path, rawQuery, route));
    }

    /**
     * Routes and starts a request like {@link #start(String, String, String)}, and keeps what the
     * metrics need: for a front end whose server library parsed the request, which calls
     * {@link Exchange#sent} where it hands the reply to the library. Never throws.
     */
    public Exchange exchange(String method, String rawPath, String rawQuery) {
        long started = metrics.start();
        String path;
        try {
            path = Paths.normalize(rawPath);
        } catch (HttpException e) {
            return new Exchange(Step.of(Reply.error(e.status(), e.getMessage())), metrics.unmatched(), started);
        }
        Routes.Route<Bound> route = routes.find(method, path);
        if (route == null) return new Exchange(Step.of(routes.miss(method, path)), metrics.unmatched(), started);
        return new Exchange(start(route.handler, new SimpleRequest(method, path, rawQuery, route)), route.handler.series, started);
    }

    /** A request started by {@link #exchange}: its first step, and its series in the metrics. */
    public static final class Exchange {
        /** The endpoint's first step: its reply, or a wait to run with the front end's way of waiting. */
        public final Step step;
        private final Metrics.Route series;
        private final long started;

        Exchange(Step step, Metrics.Route series, long started) {
            this.step = step;
            this.series = series;
            this.started = started;
        }

        /** Records the request in the metrics with its reply's status and its duration: once, as the reply is sent. */
        public void sent(Reply reply) {
            series.record(reply.status, started);
        }
    }

    /**
     * Runs one endpoint's logic up to its first wait, for a front end that routed the request
     * itself (kiln's own HTTP layer). Never throws (see {@link #start(String, String, String)}).
     */
    public Step start(Endpoint endpoint, Request request) {
        return start(bound.get(endpoint), request);
    }

    private static Step start(Bound endpoint, Request request) {
        try {
            return endpoint.logic.handle(request).forRequest(request);
        } catch (Exception | Error e) {
            return Step.of(Failures.toReply(e, request));
        }
    }

    /** @return every endpoint as lines {@code "  GET /queries?queries=N   N random rows (1..500)"}, for --help */
    public static String usage() {
        int width = ALL.stream().mapToInt(e -> e.usage.length()).max().orElse(0);
        StringBuilder s = new StringBuilder();
        for (Endpoint e : ALL) {
            s.append("  ").append(e.method).append(' ').append(e.usage).append(" ".repeat(width - e.usage.length() + 2))
                .append(e.description).append('\n');
        }
        return s.toString();
    }

    /** The index page ({@code GET /}): a link to every other endpoint, its usage and description. */
    public static byte[] indexPage() {
        StringBuilder html = new StringBuilder("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>kiln</title></head><body>"
            + "<h1>kiln</h1><p>A fiber-based async database demo server. Endpoints (TechEmpower test types):</p><ul>");
        for (Endpoint e : ALL) {
            if (e.path.equals("/")) continue;
            html.append("<li><a href=\"").append(Encode.forHtmlAttribute(e.example)).append("\">").append(Encode.forHtml(e.usage))
                .append("</a> &mdash; ").append(Encode.forHtml(e.description)).append("</li>");
        }
        return html.append("</ul></body></html>").toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * @return {@code reply} with {@code Cache-Control: no-store}: an answer read from the database
     *         changes from one request to the next, so no cache (a proxy, a browser's heuristic
     *         freshness, RFC 9111 section 4.2.2) may keep it
     */
    private static Reply fresh(Reply reply) {
        return reply.header("Cache-Control", "no-store");
    }

    /** @param usage the path, with {@code ?name=VALUE} when it takes parameters */
    private static Endpoint get(String usage, String example, String description, Endpoint.Binding binding) {
        int q = usage.indexOf('?');
        return new Endpoint("GET", q < 0 ? usage : usage.substring(0, q), usage, example, description, binding);
    }

    /** An endpoint bound to a server: its logic and its series in the metrics. */
    private static final class Bound {
        final Endpoint.Logic logic;
        final Metrics.Route series;

        Bound(Endpoint.Logic logic, Metrics.Route series) {
            this.logic = logic;
            this.series = series;
        }
    }

    /** A request that is only a method and a target: all the endpoints read. */
    private static final class SimpleRequest implements Request {
        private static final byte[] NO_BODY = {};
        private final String method;
        private final String path;
        private final String rawQuery;
        private final Routes.Route<Bound> route;

        SimpleRequest(String method, String path, String rawQuery, Routes.Route<Bound> route) {
            this.method = method;
            this.path = path;
            this.rawQuery = rawQuery;
            this.route = route;
        }

        @Override public String method() { return method; }
        @Override public String path() { return path; }
        @Override public String rawQuery() { return rawQuery; }
        @Override public String header(String name) { return null; }
        @Override public byte[] body() { return NO_BODY; }
        @Override public String pathParam(String name) { return route.param(path, name); }

        @Override
        public String toString() {
            return method + " " + path + (rawQuery == null ? "" : "?" + rawQuery);
        }
    }
}

package kiln.demo;

import java.nio.charset.StandardCharsets;
import java.util.List;

import kiln.http.Http;
import kiln.http.Response;
import kiln.http.ServerSentEvents;
import kiln.server.AbstractRouter;
import kiln.server.Metrics;
import kiln.server.Step;
import org.owasp.encoder.Encode;

/**
 * The endpoint registry: every endpoint of the demo, written once, as {@link Step}s that every
 * front end runs with its own way of waiting. Every front end serves exactly these ({@link #addTo});
 * the index page ({@code /}), every {@code --help} ({@link #usage}) and the conformance suite's walk
 * are derived from {@link #ALL}. {@code /metrics} answers the router's {@link Metrics}. To add an
 * endpoint, add its entry here, a test, and its line in the README's endpoint table.
 *
 * <p>Test types and rules: TechEmpower Framework Benchmarks, "Project Information / Framework Tests
 * Overview" (test types 1-7).
 */
public final class Endpoints {
    /** Every endpoint, in the order the index page and {@code --help} list them. */
    public static final List<Endpoint> ALL = List.of(
        get("/", "/", "this page: a link to every endpoint",
            (demo, router) -> {
                Step page = Step.of(Response.ok(Http.TEXT_HTML, indexPage()));
                return request -> page;
            }),
        get("/plaintext", "/plaintext", "Hello, World! as text",
            (demo, router) -> {
                Step plaintext = Step.of(Response.ok(Http.TEXT_PLAIN, Bodies.PLAINTEXT));  // immutable: one for every request
                return request -> plaintext;
            }),
        get("/json", "/json", "a JSON message",
            (demo, router) -> request -> Step.of(Response.ok(Http.APPLICATION_JSON, Bodies.helloJson()))),
        get("/db", "/db", "one random World row",
            (demo, router) -> request -> Step.after(demo.db().read(demo.randomWorld()), row -> Step.of(Response.json(row).noStore()))),
        get("/worlds/{id}", "/worlds/42", "the World row with that id (1..10000)",
            (demo, router) -> request -> {
                int id = Params.worldId(request);
                return Step.after(demo.db().read(demo.world(id)), row -> Step.of(Response.json(row).noStore()));
            }),
        get("/worlds/{id}/events", "/worlds/42/events", "server-sent events: every committed change of that row (curl -N)",
            (demo, router) -> request -> {
                int id = Params.worldId(request);
                LiveWorlds live = demo.live();
                return Step.of(ServerSentEvents.response(live.subscriber(request.header("Last-Event-ID"), id)));
            }),
        get("/queries?queries=N", "/queries?queries=20", "N random rows (1..500)",
            (demo, router) -> request -> Step.after(demo.db().read(demo.randomWorlds(Params.queries(request.param("queries")))),
                rows -> Step.of(Response.json(rows).noStore()))),
        get("/updates?queries=N", "/updates?queries=20", "N rows updated durably",
            (demo, router) -> request -> {
                return Step.after(demo.db().read(demo.randomWorlds(Params.queries(request.param("queries")))),
                    rows -> Step.after(demo.db().write(demo.updateWithNewRandomNumbers(rows)),
                        updated -> Step.of(Response.json(updated).noStore())));  // answered once the commit is durable
            }),
        get("/updates/events", "/updates/events", "server-sent events: every committed /updates, id = its commit sequence number",
            (demo, router) -> request -> {
                LiveWorlds live = demo.live();
                return Step.of(ServerSentEvents.response(live.subscriber(request.header("Last-Event-ID"), null)));
            }),
        get("/live", "/live", "a page whose table follows /updates/events live (EventSource)",
            (demo, router) -> {
                Step page = Step.of(Response.ok(Http.TEXT_HTML, Bodies.livePage()));
                return request -> page;
            }),
        get("/cached-queries?count=N", "/cached-queries?count=20", "N random rows from an in-memory cache (1..500)",
            (demo, router) -> {
                // TechEmpower test type 7: the World table held in memory, read once when the server starts
                World[] byId = new World[DemoDb.WORLD_ROWS + 1];
                demo.db().read(txn -> demo.worlds().scan(txn, (id, number) -> {
                    byId[id] = new World(id, number);
                    return true;
                })).join();
                return request -> {
                    World[] rows = new World[Params.queries(request.param("count"))];
                    for (int i = 0; i < rows.length; i++) rows[i] = byId[DemoDb.randomId()];
                    return Step.of(Response.json(rows).noStore());
                };
            }),
        get("/fortunes", "/fortunes", "the fortunes table as HTML",
            (demo, router) -> request -> Step.after(demo.db().read(demo.allFortunes()),
                fortunes -> Step.of(Response.ok(Http.TEXT_HTML, Bodies.fortunesHtml(fortunes)).noStore()))),
        get("/hello?delay=MS", "/hello?delay=100", "HelloWorld after an asynchronous sleep",
            (demo, router) -> {
                Step hello = Step.of(Response.ok(Http.TEXT_PLAIN, Bodies.HELLO));
                return request -> {
                    int ms = Params.delayMs(request.param("delay"));
                    return ms == 0 ? hello : Step.afterSleep(ms, () -> hello);
                };
            }),
        get("/healthz", "/healthz", "200 ok while the database answers reads, its writer runs and no handler holds a thread for long, else 503",
            (demo, router) -> request -> Health.check(demo, router.health())),
        get("/metrics", "/metrics", "Prometheus metrics: requests, latency, connections, the database, the JVM",
            (demo, router) -> request -> Step.of(router.metrics().response().noStore())));

    private Endpoints() {
    }

    /**
     * Binds every endpoint of {@link #ALL} to {@code demo} and the router's metrics, and registers it
     * on {@code router}, whichever front end's router that is: each runs the endpoints' {@link Step}s
     * with its own way of waiting ({@link AbstractRouter#steps}).
     *
     * <pre>{@code
     * Router router = Endpoints.addTo(new Router(metrics), DemoDb.open(db))   // the demo endpoints
     *     .get("/hits", req -> ...);                                          // plus your own
     * }</pre>
     *
     * @return {@code router}, for chaining
     */
    public static <R extends AbstractRouter<?, R>> R addTo(R router, DemoDb demo) {
        for (Endpoint e : ALL) router.steps(e.method, e.path, e.binding.bind(demo, router));
        return router;
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

    /** @param usage the path, with {@code ?name=VALUE} when it takes parameters */
    private static Endpoint get(String usage, String example, String description, Endpoint.Binding binding) {
        int q = usage.indexOf('?');
        return new Endpoint("GET", q < 0 ? usage : usage.substring(0, q), usage, example, description, binding);
    }
}

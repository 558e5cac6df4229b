package kiln.server;

import java.time.Duration;

import kiln.db.Db;
import kiln.http.Http;
import kiln.http.Response;

/**
 * The operations endpoints for any app's router, as the demo serves them: {@code GET /healthz}
 * ({@code 200 ok} while the database answers a read within {@link #HEALTH_DEADLINE}, its writer
 * runs and the server reports no problem of its own, e.g. a Kilim handler holding a thread; else
 * {@code 503} with {@code Retry-After: 1} and the problem in one line) and {@code GET /metrics} (the router's
 * Prometheus scrape; 404 when the router records none). Both are marked {@code Cache-Control:
 * no-store}. A monitor, a load balancer, the systemd unit's watchdog and a deploy script read the
 * first; Prometheus the second.
 *
 * <pre>{@code
 * Router router = Operations.addTo(new Router(Metrics.create(db)), db)   // /healthz, /metrics
 *     .get("/hello", req -> Response.text("hello\n"));                     // your routes
 * }</pre>
 */
public final class Operations {
    private static final byte[] OK = {'o', 'k'};
    /**
     * How long {@code /healthz} waits for the database's read, 2 s: a database server that is paused
     * or cut off answers nothing, and the monitor hears so (503) within it.
     */
    public static final Duration HEALTH_DEADLINE = Duration.ofSeconds(2);

    private Operations() {
    }

    /**
     * Registers {@code GET /healthz} and {@code GET /metrics} on {@code router}, through
     * {@link AbstractRouter#steps}, so on every front end.
     *
     * @return {@code router}
     */
    public static <H, R extends AbstractRouter<H, R>> R addTo(R router, Db db) {
        return router
            .steps("GET", "/healthz", request -> health(db, router.health()))
            .steps("GET", "/metrics", request -> Step.of(router.metrics().response().noStore()));
    }

    /** @return the answer to {@code GET /healthz} for {@code db} and {@code server}, within {@link #HEALTH_DEADLINE} */
    public static Step health(Db db, ServerHealth server) {
        return Step.after(db.health(HEALTH_DEADLINE), health -> {
            if (!health.isOk()) return Step.of(Response.unavailable(health.problem()).noStore());
            String problem = server.problem();
            if (problem != null) return Step.of(Response.unavailable(problem).noStore());
            return Step.of(Response.ok(Http.TEXT_PLAIN, OK).noStore());
        });
    }
}

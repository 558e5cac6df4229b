package kiln.demo;

import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import kiln.server.Operations;
import kiln.server.ServerHealth;
import kiln.server.Step;
import kiln.http.Response;
import kiln.http.Http;

/**
 * {@code GET /healthz}: {@code 200 ok} when the database answers reads within
 * {@link Operations#HEALTH_DEADLINE} and its writer thread is running and not stuck
 * ({@link kiln.db.Db#health(java.time.Duration)}), and the server reports no problem of its own
 * ({@link ServerHealth}: on Kilim, a handler that has held a thread for 5 s); otherwise {@code 503}
 * with {@code Retry-After: 1} and the problem in one line, for a monitor, a load balancer, the
 * systemd unit's watchdog or a deploy script waiting for a restarted server.
 */
final class Health {
    private static final byte[] OK = {'o', 'k'};

    private Health() {
    }

    /**
     * @return the answer to {@code GET /healthz} for {@code demo}'s database and {@code server}: a
     *         read of real data, through the same path {@code /db} takes, awaited as it awaits it
     */
    static Step check(DemoDb demo, ServerHealth server) {
        long within = Operations.HEALTH_DEADLINE.toMillis();
        return Step.after(demo.db().health(Operations.HEALTH_DEADLINE), health -> {
            if (!health.isOk()) return Step.of(Response.unavailable(health.problem()).noStore());
            String problem = server.problem();
            if (problem != null) return Step.of(Response.unavailable(problem).noStore());
            return Step.after(demo.db().read(demo.randomWorld()).copy().orTimeout(within, TimeUnit.MILLISECONDS).handle((row, failure) -> failure),
                failure -> Step.of((failure == null ? Response.ok(Http.TEXT_PLAIN, OK)
                    : Response.unavailable(cause(failure) instanceof TimeoutException
                        ? "the database did not answer a read of a world within " + within + " ms"
                        : "the database does not answer reads: " + cause(failure).getMessage())).noStore()));
        });
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }
}

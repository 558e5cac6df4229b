package kiln.demo;

import kiln.db.DbHealth;
import kiln.server.ServerHealth;
import kiln.server.Step;
import kiln.http.Reply;
import kiln.http.Http;

/**
 * {@code GET /healthz}: {@code 200 ok} when the database answers a read and its writer thread is
 * running and not stuck ({@link kiln.db.Db#health}), and the server reports no problem of its own
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
        DbHealth health = demo.db().health();
        if (!health.isOk()) return Step.of(Endpoints.fresh(Reply.unavailable(health.problem())));
        String problem = server.problem();
        if (problem != null) return Step.of(Endpoints.fresh(Reply.unavailable(problem)));
        return Step.after(demo.db().read(demo.randomWorld()).handle((row, failure) -> failure),
            failure -> Step.of(Endpoints.fresh(failure == null ? Reply.ok(Http.TEXT_PLAIN, OK)
                : Reply.unavailable("the database does not answer reads: " + cause(failure).getMessage()))));
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }
}

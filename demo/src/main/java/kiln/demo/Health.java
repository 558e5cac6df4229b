package kiln.demo;

import kiln.db.DbHealth;
import kiln.server.ServerHealth;
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

    /** @return the reply to {@code GET /healthz} for {@code demo}'s database and {@code server}, now */
    static Reply check(DemoDb demo, ServerHealth server) {
        DbHealth health = demo.db().health();
        if (!health.isOk()) return Reply.unavailable(health.problem());
        String problem = server.problem();
        if (problem != null) return Reply.unavailable(problem);
        try {
            demo.readRandomWorld();  // a read of real data, through the same path /db takes
        } catch (RuntimeException e) {
            return Reply.unavailable("the database does not answer reads: " + e.getMessage());
        }
        return Reply.ok(Http.TEXT_PLAIN, OK);
    }
}

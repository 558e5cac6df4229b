package app;

import static kiln.kilim.Fibers.await;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import kiln.http.HttpException;
import kiln.http.Response;
import kiln.server.Metrics;
import kiln.server.Operations;
import kiln.kilim.KilimMain;
import kiln.kilim.Router;
import picocli.CommandLine.Option;

/**
 * Your app: routes over a kiln database, each request answered in its connection's Kilim fiber.
 * A handler reads like blocking code, but {@code await(...)} pauses the fiber, not the thread.
 * Never block in a handler (no Thread.sleep, join() or blocking I/O): see kiln's docs/handlers.md.
 */
public final class App {
    private App() {
    }

    /** A page's hit count, sent as {@code {"page":"home","hits":1}}. */
    public record Hits(String page, long hits) {
    }

    /** The app's own flags: set from the command line before the routes are built, listed by {@code --help} with the server's. */
    public static final class Options {
        @Option(names = "--greeting", paramLabel = "TEXT", defaultValue = "Hello from __NAME__",
            description = "What GET /hello answers (default: ${DEFAULT-VALUE}).")
        String greeting;
    }

    /** @return the routes, over {@code db} (open your tables here), as {@code options} say */
    public static Router routes(Db db, Options options) {
        Table<String, Long> hits = db.table("hits", Codec.STRING, Codec.LONG);

        // /healthz for a monitor or load balancer, /metrics for Prometheus: requests, latency, the database
        return Operations.addTo(new Router(Metrics.create(db)), db)
            .get("/hello", req -> Response.text(options.greeting + "\n"))
            .post("/hits/{page}", req -> {
                String page = req.pathParam("page");
                long count = await(db.write(txn -> {      // runs on the database's writer thread
                    long next = hits.get(txn, page, 0L) + 1;
                    hits.put(txn, page, next);
                    return next;
                }));                                      // the fiber resumes once the commit is on disk
                return Response.json(new Hits(page, count));
            })
            .get("/hits/{page}", req -> {
                String page = req.pathParam("page");
                Long count = await(db.read(txn -> hits.get(txn, page)));   // on LMDB a read runs inline
                if (count == null) throw new HttpException(404, "no hits on " + page);
                return Response.json(new Hits(page, count));
            });
    }

    /** {@code java -jar target/__NAME__.jar --port 8080 --data data}; {@code --help} lists the options, the app's and the server's. */
    public static void main(String[] args) {
        Options options = new Options();
        KilimMain.serve("__NAME__", "__NAME__: counts hits per page, durably.", args, db -> routes(db, options), options);
    }
}

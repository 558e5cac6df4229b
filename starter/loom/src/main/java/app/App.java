package app;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import kiln.http.HttpException;
import kiln.http.Response;
import kiln.server.Metrics;
import kiln.server.Operations;
import kiln.loom.LoomMain;
import kiln.loom.Router;
import picocli.CommandLine.Option;

/**
 * Your app: routes over a kiln database, each request answered on its connection's virtual thread
 * (JDK 21+). A handler is plain blocking Java: {@code join()} parks the virtual thread, not its carrier.
 * Do not pin the carrier for long (native calls; synchronized on JDK 21-23): see kiln's docs/handlers.md.
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
                long count = db.write(txn -> {             // runs on the database's writer thread
                    long next = hits.get(txn, page, 0L) + 1;
                    hits.put(txn, page, next);
                    return next;
                }).join();                                // parks this virtual thread until the commit is on disk
                return Response.json(new Hits(page, count));
            })
            .get("/hits/{page}", req -> {
                String page = req.pathParam("page");
                Long count = db.read(txn -> hits.get(txn, page)).join();    // on LMDB a read runs inline
                if (count == null) throw new HttpException(404, "no hits on " + page);
                return Response.json(new Hits(page, count));
            });
    }

    /** {@code java -jar target/__NAME__.jar --port 8080 --data data}; {@code --help} lists the options, the app's and the server's. */
    public static void main(String[] args) {
        Options options = new Options();
        LoomMain.serve("__NAME__", "__NAME__: counts hits per page, durably.", args, db -> routes(db, options), options);
    }
}

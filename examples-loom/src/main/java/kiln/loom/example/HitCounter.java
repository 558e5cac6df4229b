package kiln.loom.example;

import java.util.Map;

import kiln.demo.DemoDb;
import kiln.demo.Endpoints;
import kiln.http.HttpException;
import kiln.http.Response;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import kiln.loom.LoomMain;
import kiln.loom.Router;

/**
 * The handler guide's example on virtual threads (docs/handlers.md), the twin of
 * {@code kiln.kilim.example.HitCounter} (join() where the fiber has await()), kept compiling and in
 * sync with the guide by HitCounterTest; in examples-loom, not in kiln-http-loom's jar. Run it with
 * {@code make demo SERVER=loom APP=kiln.loom.example.HitCounter}, then
 * {@code curl 'http://127.0.0.1:8080/hits?page=home'}. JDK 21+.
 */
public final class HitCounter {
    private HitCounter() {
    }

    /** @return the demo routes plus GET /hits?page=NAME, which counts visits per page durably */
    public static Router routes(Db db) {
        // README-BEGIN
        Table<String, Long> hits = db.table("hits", Codec.STRING, Codec.LONG);

        Router router = Endpoints.addTo(new Router(), DemoDb.open(db))
            .get("/hits", req -> {
                String page = req.param("page");
                if (page == null || page.isEmpty()) throw new HttpException(400, "add ?page=NAME");

                long count = db.write(txn -> {             // runs on the writer thread, in a transaction
                    long next = hits.get(txn, page, 0L) + 1;
                    hits.put(txn, page, next);
                    return next;
                }).join();                                 // parks this virtual thread until the commit is on disk

                long pages = db.read(txn -> hits.count(txn)).join();    // on LMDB a read runs inline: no wait
                return Response.json(Map.of("page", page, "hits", count, "pages", pages));
            });
        // README-END
        return router;
    }

    /** {@code make demo SERVER=loom APP=kiln.loom.example.HitCounter}; the standard options, {@code --help} for them. */
    public static void main(String[] args) {
        LoomMain.serve("hit-counter", args, HitCounter::routes);
    }
}

package kiln.kilim.example;

import static kiln.kilim.Fibers.await;

import java.util.Map;

import kiln.demo.DemoDb;
import kiln.demo.Endpoints;
import kiln.http.HttpException;
import kiln.http.Response;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import kiln.kilim.KilimMain;
import kiln.kilim.Router;

/**
 * The handler guide's fiber handler example (docs/handlers.md), kept compiling (and its text in sync
 * with the guide) by HitCounterTest: an app on kiln-http-kilim, in a module of its own
 * (examples-kilim), not in the library's jar. Run it with
 * {@code make demo APP=kiln.kilim.example.HitCounter}, then
 * {@code curl 'http://127.0.0.1:8080/hits?page=home'}.
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

                long count = await(db.write(txn -> {       // runs on the writer thread, in a transaction
                    long next = hits.get(txn, page, 0L) + 1;
                    hits.put(txn, page, next);
                    return next;
                }));                                       // pauses this fiber until the commit is on disk

                long pages = await(db.read(txn -> hits.count(txn)));    // on LMDB a read runs inline: no pause
                return Response.json(Map.of("page", page, "hits", count, "pages", pages));
            });
        // README-END
        return router;
    }

    /** {@code make demo APP=kiln.kilim.example.HitCounter}; the standard options, {@code --help} for them. */
    public static void main(String[] args) {
        KilimMain.serve("hit-counter", args, HitCounter::routes);
    }
}

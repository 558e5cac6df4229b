package kiln.kilim;

import kilim.Pausable;
import kilim.Task;
import kiln.app.Bodies;
import kiln.app.DemoDb;
import kiln.app.Http.Endpoint;
import kiln.app.Params;
import kiln.app.World;
import kiln.db.Db;

/**
 * The demo's endpoints as fiber handlers: each reads like blocking code, and every
 * {@code await()} / {@code Task.sleep} pauses the connection's fiber instead of its carrier thread.
 * Test types and rules: TechEmpower Framework Benchmarks, "Framework Tests Overview".
 */
public final class DemoRoutes {
    private DemoRoutes() {
    }

    /** @return a router serving every endpoint of {@link Endpoint} from {@code demo} */
    public static Router router(DemoDb demo) {
        Db db = demo.db();
        return new Router()
            .get(Endpoint.INDEX.path, req -> HttpResponse.ok(Endpoint.INDEX.contentType, Bodies.INDEX))
            .get(Endpoint.PLAINTEXT.path, req -> HttpResponse.ok(Endpoint.PLAINTEXT.contentType, Bodies.PLAINTEXT))
            .get(Endpoint.JSON.path, req -> HttpResponse.ok(Endpoint.JSON.contentType, Bodies.helloJson()))
            .get(Endpoint.DB.path, req -> HttpResponse.json(db.read(demo.randomWorld()).await()))
            .get(Endpoint.QUERIES.path, req -> HttpResponse.json(readRandomWorlds(demo, Params.queriesParam(req.rawQuery()))))
            .get(Endpoint.UPDATES.path, req -> {
                World[] rows = readRandomWorlds(demo, Params.queriesParam(req.rawQuery()));
                World[] updated = db.write(demo.updateWithNewRandomNumbers(rows)).await();  // durable on return
                return HttpResponse.json(updated);
            })
            .get(Endpoint.FORTUNES.path, req ->
                HttpResponse.ok(Endpoint.FORTUNES.contentType, Bodies.fortunesHtml(db.read(demo.allFortunes()).await())))
            .get(Endpoint.HELLO.path, req -> {
                int delay = Params.delayParam(req.rawQuery());  // a bad delay is answered with 400
                if (delay > 0) Task.sleep(delay);
                return HttpResponse.ok(Endpoint.HELLO.contentType, Bodies.HELLO);
            });
    }

    /** N separate random single-row reads, as the multiple-queries test requires. */
    static World[] readRandomWorlds(DemoDb demo, int n) throws Pausable {
        World[] rows = new World[n];
        for (int i = 0; i < n; i++) rows[i] = demo.db().read(demo.randomWorld()).await();
        return rows;
    }
}

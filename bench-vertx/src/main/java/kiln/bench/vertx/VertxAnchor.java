package kiln.bench.vertx;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import io.vertx.core.AbstractVerticle;
import io.vertx.core.Promise;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgConnection;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;

/**
 * The peer anchor of {@code ./ab-sweep.sh --postgres}: Vert.x with its reactive PostgreSQL client, the
 * JVM's front-runner on TechEmpower's database tests, serving the three tests the sweep compares on
 * the same PostgreSQL as kiln, as TechEmpower defines them (https://github.com/TechEmpower/FrameworkBenchmarks/wiki/Project-Information-Framework-Tests-Overview):
 * <ul>
 *   <li>{@code GET /db}: one random row of {@code World}, {@code {"id":..,"randomNumber":..}};</li>
 *   <li>{@code GET /queries?queries=N}: N random rows, one query each (N clamped to 1..500);</li>
 *   <li>{@code GET /updates?queries=N}: N random rows read, given new random numbers, written back in
 *       one transaction (rows sorted by id, so that concurrent updates cannot deadlock).</li>
 * </ul>
 * Its {@code World} table is its own ({@code vertx_world}, filled with 10,000 rows at the first start):
 * kiln's tables hold kiln's encoding. As TechEmpower's Vert.x entry: one verticle per core, each with
 * its own HTTP server on the shared port and its own PostgreSQL connection, queries pipelined on it
 * (an update's batch is one implicit transaction: its statements go before one Sync).
 *
 * <pre>{@code java -jar bench-vertx/target/vertx-anchor.jar --port 8090 --db postgresql://kiln@127.0.0.1:5432/kiln}</pre>
 */
public final class VertxAnchor extends AbstractVerticle {
    static final int ROWS = 10_000;
    private static final String SELECT = "SELECT id, randomnumber FROM vertx_world WHERE id = $1";
    private static final String UPDATE = "UPDATE vertx_world SET randomnumber = $2 WHERE id = $1";

    private final PgConnectOptions options;
    private final int port;
    private final String bind;
    private SqlClient db;

    private VertxAnchor(PgConnectOptions options, int port, String bind) {
        this.options = options;
        this.port = port;
        this.bind = bind;
    }

    public static void main(String[] args) {
        int port = 8090;
        String bind = "127.0.0.1";
        String db = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--bind" -> bind = args[++i];
                case "--db" -> db = args[++i];
                default -> usage("unknown option " + args[i]);
            }
        }
        if (db == null) usage("--db is required");
        Vertx vertx = Vertx.vertx();
        PgConnectOptions connect = PgConnectOptions.fromUri(db.replaceFirst("^jdbc:", "")).setPipeliningLimit(100_000);
        Pool setup = Pool.pool(vertx, connect, new PoolOptions().setMaxSize(1));
        int instances = Runtime.getRuntime().availableProcessors();
        int p = port;
        String b = bind;
        createTable(setup)
            .compose(v -> setup.close())
            .compose(v -> vertx.deployVerticle(() -> new VertxAnchor(connect, p, b), new DeploymentOptions().setInstances(instances)))
            .onSuccess(id -> System.out.println("vertx-anchor listening on http://" + b + ":" + p + "/"))
            .onFailure(e -> {
                System.err.println("vertx-anchor: cannot start: " + e);
                System.exit(1);
            });
    }

    private static void usage(String problem) {
        System.err.println("vertx-anchor: " + problem + "\nusage: java -jar vertx-anchor.jar --db postgresql://USER@HOST:PORT/DB"
            + " [--port 8090] [--bind 127.0.0.1]");
        System.exit(2);
    }

    /** Creates and fills {@code vertx_world} when it is missing. */
    private static Future<Void> createTable(Pool pool) {
        return pool.query("CREATE TABLE IF NOT EXISTS vertx_world (id integer PRIMARY KEY, randomnumber integer NOT NULL)").execute()
            .compose(r -> pool.query("SELECT count(*) FROM vertx_world").execute())
            .compose(rows -> {
                if (rows.iterator().next().getLong(0) >= ROWS) return Future.succeededFuture();
                return pool.query("INSERT INTO vertx_world SELECT i, 1 + floor(random() * " + ROWS + ")::int FROM generate_series(1, "
                    + ROWS + ") i ON CONFLICT DO NOTHING").execute().mapEmpty();
            });
    }

    @Override
    public void start(Promise<Void> started) {
        PgConnection.connect(vertx, options)
            .compose(connection -> {
                db = connection;
                return vertx.createHttpServer().requestHandler(this::handle).listen(port, bind);
            })
            .<Void>mapEmpty().onComplete(started);
    }

    private void handle(HttpServerRequest request) {
        switch (request.path()) {
            case "/db" -> one(randomId()).onComplete(ar -> {
                if (ar.succeeded()) send(request, ar.result().encode());
                else fail(request, ar.cause());
            });
            case "/queries" -> many(queries(request)).onComplete(ar -> {
                if (ar.succeeded()) send(request, new JsonArray(ar.result()).encode());
                else fail(request, ar.cause());
            });
            case "/updates" -> many(queries(request)).compose(this::update).onComplete(ar -> {
                if (ar.succeeded()) send(request, new JsonArray(ar.result()).encode());
                else fail(request, ar.cause());
            });
            default -> request.response().setStatusCode(404).end("not found");
        }
    }

    private Future<JsonObject> one(int id) {
        return db.preparedQuery(SELECT).execute(Tuple.of(id)).map(VertxAnchor::world);
    }

    private static JsonObject world(RowSet<Row> rows) {
        Row row = rows.iterator().next();
        return new JsonObject().put("id", row.getInteger(0)).put("randomNumber", row.getInteger(1));
    }

    /** @return {@code n} random rows, one query each, sent at once (pipelined on the connection) */
    private Future<List<JsonObject>> many(int n) {
        List<Future<JsonObject>> rows = new ArrayList<>(n);
        for (int i = 0; i < n; i++) rows.add(one(randomId()));
        return Future.all(rows).map(all -> {
            List<JsonObject> list = new ArrayList<>(n);
            for (int i = 0; i < n; i++) list.add(all.resultAt(i));
            return list;
        });
    }

    /** Gives each row a new random number and writes them all in one batch (one transaction), sorted by id. */
    private Future<List<JsonObject>> update(List<JsonObject> rows) {
        List<Tuple> batch = new ArrayList<>(rows.size());
        for (JsonObject row : rows) row.put("randomNumber", randomId());
        rows.stream().sorted(Comparator.comparingInt(r -> r.getInteger("id")))
            .forEach(r -> batch.add(Tuple.of(r.getInteger("id"), r.getInteger("randomNumber"))));
        return db.preparedQuery(UPDATE).executeBatch(batch).map(done -> rows);
    }

    private static int queries(HttpServerRequest request) {
        try {
            return Math.max(1, Math.min(500, Integer.parseInt(request.getParam("queries", "1"))));
        } catch (NumberFormatException e) {
            return 1;
        }
    }

    private static int randomId() {
        return ThreadLocalRandom.current().nextInt(1, ROWS + 1);
    }

    private static void send(HttpServerRequest request, String json) {
        request.response().putHeader("Content-Type", "application/json").putHeader("Server", "vertx").end(json);
    }

    private static void fail(HttpServerRequest request, Throwable cause) {
        request.response().setStatusCode(500).end(String.valueOf(cause));
    }
}

package kiln.bench.vertx;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vertx.core.AbstractVerticle;
import io.vertx.core.MultiMap;
import io.vertx.core.Promise;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerOptions;
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
 * <p>With or without {@code --db}, it also serves TechEmpower's plaintext and JSON tests as its entry
 * does (heads built once a second by a timer on each verticle's event loop, Netty's native epoll
 * transport), with kiln's answers and response heads: {@code GET /hello}, {@code /plaintext} and
 * {@code /json} (exactly these URIs; {@code /json} serialized by Jackson per request, as kiln's demo
 * does). That is the Vert.x anchor of {@code ./ab-sweep.sh kilim vertx}. Vert.x writes two things its
 * own way: the status line of an HTTP/1.0 request's response says {@code HTTP/1.0}, and the
 * {@code Connection} header it adds is named {@code connection}.
 *
 * <pre>{@code java -jar bench-vertx/target/vertx-anchor.jar --port 8090 [--bind 127.0.0.1] [--db postgresql://kiln@127.0.0.1:5432/kiln]}</pre>
 */
public final class VertxAnchor extends AbstractVerticle {
    static final int ROWS = 10_000;
    private static final String SELECT = "SELECT id, randomnumber FROM vertx_world WHERE id = $1";
    private static final String UPDATE = "UPDATE vertx_world SET randomnumber = $2 WHERE id = $1";

    private static final Buffer HELLO = Buffer.buffer("HelloWorld");
    private static final Buffer PLAINTEXT = Buffer.buffer("Hello, World!");
    /** One mapper for every event loop (Jackson's mappers are thread-safe), as kiln's {@code kiln.http.Json}. */
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final int JSON_LENGTH = json().length();
    private static final CharSequence TEXT = HttpHeaders.createOptimized("text/plain; charset=UTF-8");
    private static final CharSequence JSON = HttpHeaders.createOptimized("application/json");
    /** RFC 9110 section 5.6.7's IMF-fixdate, e.g. {@code Sat, 28 Nov 2026 10:57:13 GMT}. */
    private static final DateTimeFormatter IMF_FIXDATE =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    /** {@code {"message":"Hello, World!"}}. */
    record Message(String message) {
    }

    private final PgConnectOptions options;
    private final int port;
    /** The port the servers listen on: --port, or the one chosen for --port 0. */
    private static final AtomicInteger LISTENING = new AtomicInteger();
    private final String bind;
    private SqlClient db;
    /** This verticle's heads, read and rebuilt on its event loop only. */
    private MultiMap helloHeads;
    private MultiMap plaintextHeads;
    private MultiMap jsonHeads;

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
        int instances = Runtime.getRuntime().availableProcessors();
        // As TechEmpower's entry: an event loop per core, Netty's native transport (epoll here) when it loads.
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(instances).setPreferNativeTransport(true).setDisableTCCL(true));
        PgConnectOptions connect = db == null ? null : PgConnectOptions.fromUri(db.replaceFirst("^jdbc:", "")).setPipeliningLimit(100_000);
        Future<Void> ready = Future.succeededFuture();
        if (connect != null) {
            Pool setup = Pool.pool(vertx, connect, new PoolOptions().setMaxSize(1));
            ready = createTable(setup).compose(v -> setup.close());
        }
        int p = port;
        String b = bind;
        ready
            .compose(v -> vertx.deployVerticle(() -> new VertxAnchor(connect, p, b), new DeploymentOptions().setInstances(instances)))
            .onSuccess(id -> {
                System.out.println("vertx-anchor: " + (vertx.isNativeTransportEnabled() ? "native transport" : "NIO (" + vertx.unavailableNativeTransportCause() + ")")
                    + ", " + instances + " event loop(s)" + (connect == null ? ", no database" : ""));
                System.out.println("vertx-anchor listening on http://" + b + ":" + LISTENING.get() + "/");
            })
            .onFailure(e -> {
                System.err.println("vertx-anchor: cannot start: " + e);
                System.exit(1);
            });
    }

    private static void usage(String problem) {
        System.err.println("vertx-anchor: " + problem + "\nusage: java -jar vertx-anchor.jar [--db postgresql://USER@HOST:PORT/DB]"
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
        refreshHeads();
        vertx.setPeriodic(1000 - System.currentTimeMillis() % 1000, 1000, id -> refreshHeads());
        Future<Void> connected = options == null ? Future.succeededFuture()
            : PgConnection.connect(vertx, options).map(connection -> {
                db = connection;
                return null;
            });
        HttpServerOptions http = new HttpServerOptions().setHttp2ClearTextEnabled(false).setStrictThreadMode(true);
        connected
            // Port 0 would give each verticle a port of its own; a negative one, one random port they share (Vert.x's rule).
            .compose(v -> vertx.createHttpServer(http).requestHandler(this::handle).listen(port == 0 ? -1 : port, bind))
            .onSuccess(server -> LISTENING.set(server.actualPort()))
            .<Void>mapEmpty().onComplete(started);
    }

    private void refreshHeads() {
        CharSequence date = HttpHeaders.createOptimized(IMF_FIXDATE.format(Instant.now()));
        helloHeads = heads(date, TEXT, HELLO.length());
        plaintextHeads = heads(date, TEXT, PLAINTEXT.length());
        jsonHeads = heads(date, JSON, JSON_LENGTH);
    }

    /** kiln's heads, in kiln's order; Vert.x adds {@code connection} after them when the request needs it. */
    private static MultiMap heads(CharSequence date, CharSequence contentType, int contentLength) {
        return HttpHeaders.headers()
            .add("Server", "kiln")
            .add("Date", date)
            .add("Content-Type", contentType)
            .add("Content-Length", Integer.toString(contentLength))
            .copy(false);
    }

    /** @return {@code {"message":"Hello, World!"}}, serialized by Jackson now, as kiln's demo does per request */
    private static Buffer json() {
        try {
            return Buffer.buffer(MAPPER.writeValueAsBytes(new Message("Hello, World!")));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialize the /json message", e);
        }
    }

    private void handle(HttpServerRequest request) {
        switch (request.uri()) {
            case "/hello" -> {
                request.response().headers().setAll(helloHeads);
                request.response().end(HELLO);
                return;
            }
            case "/plaintext" -> {
                request.response().headers().setAll(plaintextHeads);
                request.response().end(PLAINTEXT);
                return;
            }
            case "/json" -> {
                request.response().headers().setAll(jsonHeads);
                request.response().end(json());
                return;
            }
            default -> {
                if (db == null) {
                    request.response().setStatusCode(404).end("not found");
                    return;
                }
            }
        }
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

package kiln.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.QueryFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import kiln.http.Response;
import kiln.http.Request;
import kiln.http.Http;
import kiln.server.Step;
import kiln.server.Failures;
import kiln.http.HttpException;
import kiln.http.spi.ResponseWriter;

/** The endpoint registry's logic on a real database, run with each way of waiting a {@link Step} has. */
class EndpointsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir Path dir;
    private Db db;
    private DemoDb demo;
    private Served endpoints;
    private ExecutorService worker;
    private ScheduledExecutorService timer;

    @BeforeEach
    void open() {
        db = Db.open(dir);
        demo = DemoDb.open(db);
        endpoints = new Served(demo);
        worker = Executors.newSingleThreadExecutor(r -> new Thread(r, "test-worker"));
        timer = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "test-timer"));
    }

    @AfterEach
    void close() {
        timer.shutdownNow();
        worker.shutdownNow();
        db.close();
    }

    /** @return the response of a step that must not wait */
    private Response now(String method, String path, String rawQuery) {
        Step step = endpoints.start(method, path, rawQuery);
        assertTrue(step.isDone(), () -> method + " " + path + " answered at once, got " + step);
        return step.response();
    }

    private Response async(Step step, String expectedThread) throws Exception {
        CompletableFuture<Response> sent = new CompletableFuture<>();
        CompletableFuture<String> thread = new CompletableFuture<>();
        Step.runAsync(step, worker, timer, response -> {
            thread.complete(Thread.currentThread().getName());
            sent.complete(response);
        });
        Response response = sent.get(30, TimeUnit.SECONDS);
        assertEquals(expectedThread, thread.get(), "the response is sent from");
        return response;
    }

    private static String text(Response r) {
        return new String(r.body, StandardCharsets.UTF_8);
    }

    @Test
    void theIndexPageLinksEveryOtherEndpointAsBefore() {
        Response index = now("GET", "/", null);
        assertEquals(Http.TEXT_HTML, index.contentType);
        // the bytes the hand-written page had before the registry generated it
        assertEquals("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>kiln</title></head><body>"
            + "<h1>kiln</h1><p>A fiber-based async database demo server. Endpoints (TechEmpower test types):</p><ul>"
            + "<li><a href=\"/plaintext\">/plaintext</a> &mdash; Hello, World! as text</li>"
            + "<li><a href=\"/json\">/json</a> &mdash; a JSON message</li>"
            + "<li><a href=\"/db\">/db</a> &mdash; one random World row</li>"
            + "<li><a href=\"/worlds/42\">/worlds/{id}</a> &mdash; the World row with that id (1..10000)</li>"
            + "<li><a href=\"/worlds/42/events\">/worlds/{id}/events</a> &mdash; server-sent events: every committed change of that row (curl -N)</li>"
            + "<li><a href=\"/queries?queries=20\">/queries?queries=N</a> &mdash; N random rows (1..500)</li>"
            + "<li><a href=\"/updates?queries=20\">/updates?queries=N</a> &mdash; N rows updated durably</li>"
            + "<li><a href=\"/updates/events\">/updates/events</a> &mdash; server-sent events: every committed /updates, id = its commit sequence number</li>"
            + "<li><a href=\"/live\">/live</a> &mdash; a page whose table follows /updates/events live (EventSource)</li>"
            + "<li><a href=\"/cached-queries?count=20\">/cached-queries?count=N</a> &mdash; N random rows from an in-memory cache (1..500)</li>"
            + "<li><a href=\"/fortunes\">/fortunes</a> &mdash; the fortunes table as HTML</li>"
            + "<li><a href=\"/hello?delay=100\">/hello?delay=MS</a> &mdash; HelloWorld after an asynchronous sleep</li>"
            + "<li><a href=\"/healthz\">/healthz</a> &mdash; 200 ok while the database answers reads, its writer runs and no handler holds a thread for long, else 503</li>"
            + "<li><a href=\"/metrics\">/metrics</a> &mdash; Prometheus metrics: requests, latency, connections, the database, the JVM</li>"
            + "</ul></body></html>", text(index));
        for (Endpoint e : Endpoints.ALL) {
            if (!e.path.equals("/")) assertTrue(text(index).contains("href=\"" + e.example + "\""), e::toString);
        }
    }

    @Test
    void everyEndpointAnswers200AtItsExampleAndHelpListsIt() throws Exception {
        Set<String> paths = new HashSet<>();
        for (Endpoint e : Endpoints.ALL) {
            assertTrue(paths.add(e.path), () -> "one entry per path: " + e);
            int q = e.example.indexOf('?');
            Response r = Step.runBlocking(endpoints.start(e.method, q < 0 ? e.example : e.example.substring(0, q),
                q < 0 ? null : e.example.substring(q + 1)));
            assertEquals(200, r.status, () -> e + ": " + text(r));
            assertTrue(Endpoints.usage().contains(e.method + " " + e.usage), e::toString);
        }
    }

    @Test
    void staticEndpointsAnswerAtOnceWithTheirBodies() {
        Response plain = now("GET", "/plaintext", null);
        assertEquals(200, plain.status);
        assertEquals(Http.TEXT_PLAIN, plain.contentType);
        assertArrayEquals(Bodies.PLAINTEXT, plain.body);
        assertEquals(0, plain.headerCount());
        Response json = now("GET", "/json", null);
        assertEquals(Http.APPLICATION_JSON, json.contentType);
        assertEquals("{\"message\":\"Hello, World!\"}", text(json));
        assertArrayEquals(Bodies.HELLO, now("GET", "/hello", null).body);
    }

    @Test
    void unknownPathIs404AndAnotherMethodIs405WithAllow() {
        Response missing = now("GET", "/nope", null);
        assertEquals(404, missing.status);
        assertEquals("404 Not Found: no such path: /nope\n", text(missing));
        Response post = now("POST", "/db", null);
        assertEquals(405, post.status);
        assertEquals(1, post.headerCount());
        assertEquals("Allow", post.headerName(0));
        assertEquals("GET, HEAD, OPTIONS", post.headerValue(0));
        assertEquals(Http.TEXT_PLAIN, post.contentType);
    }

    /** A library front end passes the path as sent; it is routed in its normal form (Paths). */
    @Test
    void pathsAreRoutedInTheirNormalForm() {
        for (String path : new String[] {"/./plaintext", "/a/../plaintext", "/%70laintext", "/%2e/plaintext"}) {
            assertEquals("Hello, World!", text(now("GET", path, null)), path);
        }
        assertEquals(404, now("GET", "//plaintext", null).status);
        assertEquals(400, now("GET", "/../plaintext", null).status);
        assertEquals(400, now("GET", "/%zz", null).status);
        Response options = now("OPTIONS", "*", null);
        assertEquals(200, options.status);
        assertEquals("GET, HEAD, OPTIONS", options.header("Allow"));
    }

    @Test
    void headIsAnsweredByTheGetLogic() {
        Response head = now("HEAD", "/plaintext", null);
        assertEquals(200, head.status);
        assertArrayEquals(Bodies.PLAINTEXT, head.body, "the same response; the front end drops the body");
    }

    @Test
    void badParametersAre400() {
        Response delay = now("GET", "/hello", "delay=soon");
        assertEquals(400, delay.status);
        assertTrue(text(delay).startsWith("400 Bad Request: delay must be"), text(delay));
        assertEquals(400, now("GET", "/hello", "delay=-1").status);
        assertEquals(400, now("GET", "/queries", "queries=%zz").status);
    }

    @Test
    void readsAnswerInlineAndQueriesAreClampedTo1Through500() throws Exception {
        Response db = now("GET", "/db", null);
        assertEquals("no-store", db.header("Cache-Control"), "an answer from the database is not cacheable");
        assertEquals("no-store", now("GET", "/fortunes", null).header("Cache-Control"));
        assertNull(now("GET", "/plaintext", null).header("Cache-Control"), "a constant answer may be cached");
        JsonNode one = JSON.readTree(db.body);
        assertTrue(one.isObject() && one.get("id").isInt() && one.get("randomNumber").isInt(), one::toString);
        assertEquals(3, JSON.readTree(now("GET", "/queries", "queries=3").body).size());
        assertEquals(1, JSON.readTree(now("GET", "/queries", "queries=0").body).size());
        assertEquals(500, JSON.readTree(now("GET", "/queries", "queries=9999").body).size());
        assertTrue(text(now("GET", "/fortunes", null)).contains("&lt;script&gt;"));
    }

    @Test
    void worldsByIdAnswerThatRowAndA404ForAnIdTheTableDoesNotHave() throws Exception {
        JsonNode row = JSON.readTree(now("GET", "/worlds/42", null).body);
        assertEquals(42, row.get("id").intValue());
        assertEquals(db.read(txn -> demo.worlds().get(txn, 42)).join(), row.get("randomNumber").intValue());
        for (String id : new String[] {"0", "10001", "abc", "-1", "%34%32x"}) {
            Response missing = now("GET", "/worlds/" + id, null);
            assertEquals(404, missing.status, id);
            assertTrue(text(missing).startsWith("404 Not Found: no World with id"), text(missing));
        }
        assertEquals(42, JSON.readTree(now("GET", "/worlds/%34%32", null).body).get("id").intValue(), "the segment is percent-decoded");
        assertEquals(404, now("GET", "/worlds/", null).status, "an empty segment is no id");
        assertEquals(405, now("POST", "/worlds/7", null).status);
    }

    /** One row, one path: a rule keyed on /worlds/5 (--auth-paths) must not be passed by /worlds/05 serving the same row. */
    @Test
    void aWorldIsServedOnlyUnderItsCanonicalId() throws Exception {
        for (String id : new String[] {"05", "+5", "%2B5", "007", "%D9%A5", "5%20"}) {
            Response other = now("GET", "/worlds/" + id, null);
            assertEquals(404, other.status, id + " answered " + text(other));
            assertTrue(text(other).startsWith("404 Not Found: no World with id '"), text(other));
        }
        assertEquals("404 Not Found: no World with id '+5'\n", text(now("GET", "/worlds/%2B5", null)), "named as decoded");
        assertEquals(404, now("GET", "/worlds/05/events", null).status, "the row's events too");
        assertEquals(5, JSON.readTree(now("GET", "/worlds/%35", null).body).get("id").intValue(), "/worlds/%35 is /worlds/5 itself");
    }

    @Test
    void cachedQueriesServeNRowsFromTheWorldTableAsLoadedAtStart() throws Exception {
        assertEquals(1, JSON.readTree(now("GET", "/cached-queries", null).body).size());
        assertEquals(500, JSON.readTree(now("GET", "/cached-queries", "count=501").body).size());
        JsonNode rows = JSON.readTree(now("GET", "/cached-queries", "count=50").body);
        assertEquals(50, rows.size());
        for (JsonNode row : rows) {
            int id = row.get("id").intValue();
            assertEquals(db.read(txn -> demo.worlds().get(txn, id)).join(), row.get("randomNumber").intValue(), row::toString);
        }
    }

    @Test
    void updatesAnswerOnlyAfterTheWriteIsDurableAndContinueOnTheWorker() throws Exception {
        CountDownLatch inWriter = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        QueryFuture<Object> gate = db.write(txn -> {
            inWriter.countDown();
            release.await(30, TimeUnit.SECONDS);
            return null;
        });
        assertTrue(inWriter.await(30, TimeUnit.SECONDS));
        Step step;
        try {
            step = endpoints.start("GET", "/updates", "queries=4");
            assertFalse(step.isDone(), "waits for the commit");
            assertFalse(step.future().isDone(), "the commit is held back");
        } finally {
            release.countDown();
        }
        gate.join();
        Response response = async(step, "test-worker");
        JsonNode rows = JSON.readTree(response.body);
        assertEquals(4, rows.size());
        for (JsonNode row : rows) {
            int id = row.get("id").intValue();
            int stored = db.read(txn -> demo.worlds().get(txn, id)).join();
            assertEquals(row.get("randomNumber").intValue(), stored, "the answered row is what the database holds");
        }
    }

    @Test
    void helloDelayIsAStepThatSleeps() throws Exception {
        Step step = endpoints.start("GET", "/hello", "delay=250");
        assertEquals(250, step.sleepMs());
        assertNull(step.future());
        assertArrayEquals(Bodies.HELLO, step.next().response().body);
        assertArrayEquals(Bodies.HELLO, async(endpoints.start("GET", "/hello", "delay=20"), "test-worker").body);
    }

    @Test
    void blockingRunFinishesTheRequestOnTheCallingThread() throws Exception {
        Response updated = Step.runBlocking(endpoints.start("GET", "/updates", "queries=2"));
        assertEquals(2, JSON.readTree(updated.body).size());
        assertArrayEquals(Bodies.HELLO, Step.runBlocking(endpoints.start("GET", "/hello", "delay=5")).body);
    }

    @Test
    void theFailurePolicyMaps503400And500() {
        Response busy = Failures.toResponse(new java.util.concurrent.CompletionException(new DbException.Overloaded("queue full")), null);
        assertEquals(503, busy.status);
        assertEquals("1", busy.header("Retry-After"));
        assertEquals(418, Failures.toResponse(new HttpException(418, "teapot"), null).status);
        Response broken = Failures.toResponse(new IllegalStateException("disk on fire"), "GET /x");
        assertEquals(500, broken.status);
        assertFalse(text(broken).contains("disk on fire"), "details stay in the log");
        Response forged = Failures.toResponse(new DbException.BadContinuation("bad continuation: its signature does not match"), "GET /x");
        assertEquals(400, forged.status);
        assertTrue(text(forged).contains("bad continuation: its signature does not match"), text(forged));
        assertEquals(507, Failures.toResponse(new DbException.DatabaseFull("database full: ..."), null).status);
        Response readers = Failures.toResponse(new DbException.ReadersFull("all 1016 read slots ... --db-max-readers", null), null);
        assertEquals(503, readers.status);
        assertTrue(text(readers).contains("the database is busy") && !text(readers).contains("--db-max-readers"),
            "the client is told it is busy; the flag to raise is in the log: " + text(readers));
        assertEquals(503, Failures.toResponse(new DbException.Fatal("database d is unusable: ...", null), null).status);
    }

    @Test
    void aFailedWaitOrContinuationBecomesAnErrorReply() {
        // complete already: the step goes on at once
        Step overloaded = Step.after(CompletableFuture.failedFuture(new DbException.Overloaded("queue full")), v -> Step.of(Response.text("no")));
        assertEquals(503, overloaded.response().status);
        Step throwing = Step.after(CompletableFuture.completedFuture(1), v -> {
            throw new HttpException(409, "taken");
        });
        assertEquals(409, throwing.response().status);
        // complete later: next() once it is
        CompletableFuture<Integer> later = new CompletableFuture<>();
        Step waiting = Step.after(later, v -> {
            throw new HttpException(409, "taken");
        });
        assertFalse(waiting.isDone());
        later.complete(1);
        assertEquals(409, waiting.next().response().status);
        assertEquals(503, Failures.toResponse(new DbException.Unavailable("PostgreSQL at ... is unreachable", null), null).status);
    }

    @Test
    void replyHeadersAreKeptInOrderAndCheckedForInjection() {
        Response r = Response.text("x").header("Location", "/todos/1").header("Set-Cookie", "a=1").header("Set-Cookie", "b=2");
        assertEquals(3, r.headerCount());
        assertEquals("Set-Cookie", r.headerName(2));
        assertEquals("b=2", r.headerValue(2));
        assertThrows(IllegalArgumentException.class, () -> Response.text("x").header("X-Evil", "a\r\nSet-Cookie: b"));
        assertThrows(IllegalArgumentException.class, () -> Response.text("x").header("Content-Length", "3"));
        assertThrows(IllegalArgumentException.class, () -> Response.text("x").header("Bad Name", "v"));
        String wire = new String(ResponseWriter.closing(r), StandardCharsets.ISO_8859_1);
        assertTrue(wire.matches("(?s)HTTP/1\\.1 200 OK\r\nServer: kiln\r\nDate: [^\r]+\r\nContent-Type: text/plain; charset=UTF-8\r\n"
            + "Location: /todos/1\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx"), wire);
    }
}

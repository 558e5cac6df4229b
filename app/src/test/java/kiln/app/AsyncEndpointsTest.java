package kiln.app;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.QueryFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The endpoint logic Jetty and Undertow share, on a real database, with each way of waiting. */
class AsyncEndpointsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir Path dir;
    private Db db;
    private DemoDb demo;
    private ExecutorService worker;
    private ScheduledExecutorService timer;

    @BeforeEach
    void open() {
        db = Db.open(dir);
        demo = DemoDb.open(db);
        worker = Executors.newSingleThreadExecutor(r -> new Thread(r, "test-worker"));
        timer = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "test-timer"));
    }

    @AfterEach
    void close() {
        timer.shutdownNow();
        worker.shutdownNow();
        db.close();
    }

    private AsyncEndpoints nonBlocking() {
        return new AsyncEndpoints(demo, AsyncEndpoints.Waits.nonBlocking(worker, timer));
    }

    private static Reply now(CompletionStage<Reply> stage) {
        CompletableFuture<Reply> f = stage.toCompletableFuture();
        assertTrue(f.isDone(), "answered before handle() returned");
        return f.join();
    }

    private static Reply await(CompletionStage<Reply> stage) throws Exception {
        return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void staticEndpointsAnswerAtOnceWithTheirBodies() {
        AsyncEndpoints endpoints = nonBlocking();
        Reply plain = now(endpoints.handle("GET", "/plaintext", null));
        assertEquals(200, plain.status);
        assertEquals(Http.TEXT_PLAIN, plain.contentType);
        assertArrayEquals(Bodies.PLAINTEXT, plain.body);
        assertNull(plain.extraHeader);
        Reply json = now(endpoints.handle("GET", "/json", null));
        assertEquals(Http.APPLICATION_JSON, json.contentType);
        assertEquals("{\"message\":\"Hello, World!\"}", new String(json.body, StandardCharsets.UTF_8));
        assertArrayEquals(Bodies.INDEX, now(endpoints.handle("GET", "/", null)).body);
        assertArrayEquals(Bodies.HELLO, now(endpoints.handle("GET", "/hello", null)).body);
    }

    @Test
    void unknownPathIs404AndAnotherMethodIs405WithAllow() {
        AsyncEndpoints endpoints = nonBlocking();
        Reply missing = now(endpoints.handle("GET", "/nope", null));
        assertEquals(404, missing.status);
        assertEquals("404 Not Found: no such path: /nope\n", new String(missing.body, StandardCharsets.UTF_8));
        Reply post = now(endpoints.handle("POST", "/db", null));
        assertEquals(405, post.status);
        assertEquals("Allow", post.extraHeader);
        assertEquals("GET", post.extraValue);
        assertEquals(Http.TEXT_PLAIN, post.contentType);
    }

    @Test
    void badParametersAre400() {
        AsyncEndpoints endpoints = nonBlocking();
        Reply delay = now(endpoints.handle("GET", "/hello", "delay=soon"));
        assertEquals(400, delay.status);
        assertTrue(new String(delay.body, StandardCharsets.UTF_8).startsWith("400 Bad Request: delay must be"));
        assertEquals(400, now(endpoints.handle("GET", "/hello", "delay=-1")).status);
        assertEquals(400, now(endpoints.handle("GET", "/queries", "queries=%zz")).status);
    }

    @Test
    void readsAnswerInlineAndQueriesAreClampedTo1Through500() throws Exception {
        AsyncEndpoints endpoints = nonBlocking();
        JsonNode one = JSON.readTree(now(endpoints.handle("GET", "/db", null)).body);
        assertTrue(one.isObject() && one.get("id").isInt() && one.get("randomNumber").isInt(), one::toString);
        assertEquals(3, JSON.readTree(now(endpoints.handle("GET", "/queries", "queries=3")).body).size());
        assertEquals(1, JSON.readTree(now(endpoints.handle("GET", "/queries", "queries=0")).body).size());
        assertEquals(500, JSON.readTree(now(endpoints.handle("GET", "/queries", "queries=9999")).body).size());
        String fortunes = new String(now(endpoints.handle("GET", "/fortunes", null)).body, StandardCharsets.UTF_8);
        assertTrue(fortunes.contains("&lt;script&gt;"), fortunes);
    }

    @Test
    void updatesAnswerOnlyAfterTheWriteIsDurableAndOnTheWorker() throws Exception {
        AsyncEndpoints endpoints = nonBlocking();
        CountDownLatch inWriter = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        QueryFuture<Object> gate = db.write(txn -> {
            inWriter.countDown();
            release.await(30, TimeUnit.SECONDS);
            return null;
        });
        assertTrue(inWriter.await(30, TimeUnit.SECONDS));
        CompletableFuture<String> thread;
        CompletionStage<Reply> stage;
        try {
            stage = endpoints.handle("GET", "/updates", "queries=4");
            thread = stage.thenApply(r -> Thread.currentThread().getName()).toCompletableFuture();
            assertFalse(stage.toCompletableFuture().isDone(), "waits for the commit, without blocking the caller");
        } finally {
            release.countDown();
        }
        gate.join();
        Reply reply = await(stage);
        assertEquals("test-worker", thread.get(30, TimeUnit.SECONDS), "continued on the worker, not the writer thread");
        JsonNode rows = JSON.readTree(reply.body);
        assertEquals(4, rows.size());
        for (JsonNode row : rows) {
            int id = row.get("id").intValue();
            int stored = db.read(txn -> demo.worlds().get(txn, id)).join();
            assertEquals(row.get("randomNumber").intValue(), stored, "the answered row is what the database holds");
        }
    }

    @Test
    void helloDelayEndsOnTheWorkerWithoutBlockingTheCaller() throws Exception {
        CompletableFuture<Void> slept = new CompletableFuture<>();
        int[] asked = new int[1];
        AsyncEndpoints endpoints = new AsyncEndpoints(demo, new AsyncEndpoints.Waits() {
            @Override
            public <T> CompletionStage<T> write(QueryFuture<T> pending) {
                return pending;
            }

            @Override
            public CompletionStage<Void> sleep(int ms) {
                asked[0] = ms;
                return slept;
            }
        });
        CompletionStage<Reply> stage = endpoints.handle("GET", "/hello", "delay=250");
        assertEquals(250, asked[0]);
        assertFalse(stage.toCompletableFuture().isDone());
        slept.complete(null);
        assertArrayEquals(Bodies.HELLO, now(stage).body);

        AtomicInteger handedToWorker = new AtomicInteger();
        Executor counted = task -> {
            handedToWorker.incrementAndGet();
            worker.execute(task);
        };
        CompletionStage<Reply> timed = new AsyncEndpoints(demo, AsyncEndpoints.Waits.nonBlocking(counted, timer))
            .handle("GET", "/hello", "delay=20");
        assertArrayEquals(Bodies.HELLO, await(timed).body);
        assertEquals(1, handedToWorker.get(), "the timer hands the end of the delay to the worker");
    }

    @Test
    void blockingWaitsFinishTheRequestOnTheCallingThread() throws Exception {
        AsyncEndpoints endpoints = new AsyncEndpoints(demo, AsyncEndpoints.Waits.blocking());
        Reply updated = now(endpoints.handle("GET", "/updates", "queries=2"));
        assertEquals(2, JSON.readTree(updated.body).size());
        assertArrayEquals(Bodies.HELLO, now(endpoints.handle("GET", "/hello", "delay=5")).body);
    }

    @Test
    void overloadIs503WithRetryAfterAndOtherFailuresAre500() {
        Reply busy = AsyncEndpoints.failure(new CompletionException(new DbException.Overloaded("queue full")));
        assertEquals(503, busy.status);
        assertEquals("Retry-After", busy.extraHeader);
        assertEquals("1", busy.extraValue);
        Reply broken = AsyncEndpoints.failure(new IllegalStateException("disk on fire"));
        assertEquals(500, broken.status);
        assertFalse(new String(broken.body, StandardCharsets.UTF_8).contains("disk on fire"), "details stay in the log");
    }

    @Test
    void aFailedWriteBecomesAnErrorReply() throws Exception {
        AsyncEndpoints endpoints = new AsyncEndpoints(demo, new AsyncEndpoints.Waits() {
            @Override
            public <T> CompletionStage<T> write(QueryFuture<T> pending) {
                return CompletableFuture.failedFuture(new DbException.Overloaded("queue full"));
            }

            @Override
            public CompletionStage<Void> sleep(int ms) {
                throw new AssertionError("no sleep here");
            }
        });
        assertEquals(503, await(endpoints.handle("GET", "/updates", null)).status);
    }
}

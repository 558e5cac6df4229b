package kiln.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import kiln.db.Db;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import kiln.http.Response;
import kiln.http.Http;
import kiln.server.Step;

/** {@code GET /healthz} through the endpoint registry, on a real database: 200 ok, and every way to 503. */
class HealthTest {
    @TempDir Path dir;

    private static Response healthz(Served endpoints) {
        Step step = endpoints.start("GET", "/healthz", null);
        assertTrue(step.isDone(), "/healthz answers at once");
        return step.response();
    }

    private static String text(Response r) {
        return new String(r.body, StandardCharsets.UTF_8);
    }

    @Test
    void okWhileTheDatabaseServesThen503OnceItIsClosed() {
        Db db = Db.open(dir);
        Served endpoints = new Served(DemoDb.open(db));
        Response ok = healthz(endpoints);
        assertEquals(200, ok.status);
        assertEquals(Http.TEXT_PLAIN, ok.contentType);
        assertEquals("ok", text(ok));
        assertEquals("no-store", ok.header("Cache-Control"), "a health answer is never cached");

        db.close();
        Response down = healthz(endpoints);
        assertEquals(503, down.status);
        assertEquals("1", down.header("Retry-After"));
        assertEquals("503 Service Unavailable: the database is closed\n", text(down));
    }

    /** A database that turned fatal (here: its pages overwritten under it): /healthz 503 naming the error, /db 503 too. */
    @Test
    void unavailableNamingTheErrorOnceTheDatabaseIsFatal() throws Exception {
        Db db = Db.open(dir);
        try {
            Served endpoints = new Served(DemoDb.open(db));
            assertEquals(200, healthz(endpoints).status);
            try (java.nio.channels.FileChannel data = java.nio.channels.FileChannel.open(dir.resolve("data.mdb"),
                    java.nio.file.StandardOpenOption.WRITE)) {
                data.write(java.nio.ByteBuffer.allocate((int) data.size() - 8192), 8192);
            }
            Response read = endpoints.start("GET", "/db", null).response();
            assertEquals(503, read.status, () -> text(read));
            Response down = healthz(endpoints);
            assertEquals(503, down.status);
            assertEquals("1", down.header("Retry-After"));
            assertTrue(text(down).startsWith("503 Service Unavailable: database ") && text(down).contains("is unusable: the data file is corrupted"),
                text(down));
        } finally {
            db.close();
        }
    }

    /** A writer held inside one write query past the stall limit: reads still work, health says 503. */
    @Test
    void unavailableWhileTheWriterIsStuckAndOkOnceItMovesAgain() throws Exception {
        try (Db db = Db.builder(dir).writerStallLimit(Duration.ofMillis(300)).open()) {
            DemoDb demo = DemoDb.open(db);
            Served endpoints = new Served(demo);
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            db.write(txn -> {
                inside.countDown();
                release.await(30, TimeUnit.SECONDS);
                return null;
            });
            try {
                assertTrue(inside.await(10, TimeUnit.SECONDS), "the writer never ran the blocking write");
                Thread.sleep(600);
                assertEquals(200, endpoints.start("GET", "/db", null).response().status, "reads go on while the writer is stuck");
                Response stuck = healthz(endpoints);
                assertEquals(503, stuck.status, () -> text(stuck));
                assertEquals("1", stuck.header("Retry-After"));
                assertTrue(text(stuck).startsWith("503 Service Unavailable: the database's writer has been in one batch for "), text(stuck));
            } finally {
                release.countDown();
            }
            db.write(txn -> null).join();
            assertEquals(200, healthz(endpoints).status, "once the batch is committed");
        }
    }

    /** A problem the front end reports (Kilim: a handler that held a thread too long) is a 503 with its words, while it lasts. */
    @Test
    void unavailableWhileTheServerReportsAProblem() {
        try (Db db = Db.open(dir)) {
            Served endpoints = new Served(DemoDb.open(db));
            AtomicReference<String> problem = new AtomicReference<>();
            endpoints.router.health().add(problem::get);
            assertEquals(200, healthz(endpoints).status);
            problem.set("the handler of GET /x has held thread kiln-selector for 6000 ms without pausing (limit 5000 ms)");
            Response held = healthz(endpoints);
            assertEquals(503, held.status);
            assertEquals("1", held.header("Retry-After"));
            assertEquals("503 Service Unavailable: the handler of GET /x has held thread kiln-selector for 6000 ms without pausing (limit 5000 ms)\n",
                text(held));
            problem.set(null);
            assertEquals(200, healthz(endpoints).status, "healthy again once the problem is gone");
        }
    }
}

package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

import kiln.http.Response;
import kiln.http.ServerSentEvents;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fiber traps that used to be silent now say what to do: the README's trap table, row by row. */
class TrapsTest {
    private WatchLog watchLog;
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir Path dir;
    private Db db;
    private KilimServer server;

    @BeforeEach
    void listen() {
        watchLog = WatchLog.start();
    }

    @AfterEach
    void stop() {
        watchLog.close();
        if (server != null) server.stop(1_000);
        if (db != null) db.close();
    }

    private String base(Router router) throws Exception {
        server = new KilimServer("127.0.0.1", 0, 2, router).blockedCarrierThreshold(100);
        server.start();
        return "http://127.0.0.1:" + server.port();
    }

    private HttpResponse<String> get(String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void threadSleepInAHandlerIsReportedWithinASecondOncePerHandler() throws Exception {
        String base = base(new Router().get("/slow/{n}", req -> {
            Thread.sleep(500);  // the trap
            return Response.text("slept");
        }));
        long start = System.nanoTime();
        Thread call = new Thread(() -> {
            try {
                get(base + "/slow/1");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        call.start();
        while (watchLog.messages.isEmpty() && System.nanoTime() - start < 1_000_000_000L) Thread.sleep(10);
        long seenMs = (System.nanoTime() - start) / 1_000_000;
        assertEquals(1, watchLog.messages.size(), "one warning within 1 s of the call, got " + watchLog.messages.size() + " after " + seenMs + " ms");
        String w = watchLog.messages.get(0);
        assertTrue(w.contains("the handler of GET /slow/{n}") && w.contains("Thread.sleep") && w.contains("use Fibers.sleep(ms)")
            && w.contains("java.lang.Thread.sleep("), w);
        call.join();
        assertEquals("slept", get(base + "/slow/2").body());
        assertEquals(1, watchLog.messages.size(), "reported once per handler");
    }

    /**
     * A streamed body's poll runs the app's code on the carrier too, after its handler has answered.
     * Before: the watch named only a running handler, so a poll that blocked (a feed's log read over
     * PostgreSQL on the carrier) went unreported.
     */
    @Test
    void aStreamWhosePollBlocksIsReportedWithItsRoute() throws Exception {
        String base = base(new Router().get("/ticks", req -> ServerSentEvents.response(events -> {
            Thread.sleep(500);  // the trap, in the body rather than the handler
            events.comment("tick");
            return null;  // the end
        })));
        String body = get(base + "/ticks").body();
        assertTrue(body.contains(": tick"), body);
        assertEquals(1, watchLog.messages.size(), () -> "one warning: " + watchLog.messages);
        String w = watchLog.messages.get(0);
        assertTrue(w.startsWith("the handler of GET /ticks (its stream) has held carrier thread") && w.contains("Thread.sleep"), w);
    }

    @Test
    void joinOnADatabaseFutureInAHandlerFailsAtOnceWithTheAdvice() throws Exception {
        db = Db.open(dir);
        Table<String, Long> t = db.table("t", Codec.STRING, Codec.LONG);
        String base = base(new Router()
            .get("/join", req -> {
                try {
                    db.write(txn -> {
                        t.put(txn, "k", 1L);
                        return null;
                    }).join();  // the trap
                    return Response.text("joined");
                } catch (IllegalStateException e) {
                    return Response.text(e.getMessage());
                }
            })
            .get("/read", req -> Response.text("read " + db.read(txn -> t.get(txn, "k", 0L)).join())));
        // The writer is busy with an earlier write, so the handler's write is still queued at the
        // join (an idle writer may take a write before the handler gets to its join: then it commits,
        // and the message says so; QueryFutureTest covers that case).
        java.util.concurrent.CountDownLatch inside = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        db.write(txn -> {
            inside.countDown();
            return release.await(30, java.util.concurrent.TimeUnit.SECONDS);
        });
        String advice;
        try {
            assertTrue(inside.await(30, java.util.concurrent.TimeUnit.SECONDS));
            advice = get(base + "/join").body();
        } finally {
            release.countDown();
        }
        assertTrue(advice.startsWith("join() on a database future in fiber code") && advice.contains("use Fibers.await(future)"), advice);
        assertTrue(advice.contains("The write was withdrawn before it ran: nothing was written."), advice);
        // Withdrawn, not only unwaited: a later write commits (the writer runs writes in order) and
        // the refused one never did, so a client that retries after the 500 does not count twice.
        db.write(txn -> { t.put(txn, "later", 1L); return null; }).join();
        assertEquals("read 0", get(base + "/read").body(), "join() on a finished future (every read) returns at once; the refused write was withdrawn");
        assertTrue(watchLog.messages.isEmpty(), () -> "refused at once, so the carrier was never held: " + watchLog.messages);
    }

    /**
     * A cold start is slow once and is no handler's fault: a first request loads classes, Jackson
     * introspects the record it first writes or reads, a lambda is spun. None of it is reported (which
     * would spend the handler's one report on a false alarm); a handler's own loop or sleep is.
     */
    @Test
    void warmUpIsNotABlockedHandler() {
        StackTraceElement loop = new StackTraceElement("my.App", "lambda$routes$0", "App.java", 42);
        StackTraceElement[][] warmUps = {
            {new StackTraceElement("java.lang.ClassLoader", "loadClass", null, -1), loop},
            {new StackTraceElement("my.Message", "<clinit>", null, -1), loop},
            {new StackTraceElement("com.fasterxml.jackson.databind.introspect.POJOPropertiesCollector", "collectAll", null, -1),
                new StackTraceElement("com.fasterxml.jackson.databind.ser.BeanSerializerFactory", "createSerializer", null, -1),
                new StackTraceElement("kiln.http.Json", "write", null, -1), loop},
            {new StackTraceElement("com.fasterxml.jackson.databind.deser.BeanDeserializerFactory", "buildBeanDeserializer", null, -1), loop},
            {new StackTraceElement("java.lang.Class", "getDeclaredMethods0", null, -2), loop},
            {new StackTraceElement("java.lang.invoke.InnerClassLambdaMetafactory", "spinInnerClass", null, -1), loop},
        };
        for (StackTraceElement[] stack : warmUps) assertTrue(BlockedCarrierChecker.warmingUp(stack), stack[0].toString());
        assertFalse(BlockedCarrierChecker.warmingUp(new StackTraceElement[] {loop}));
        assertFalse(BlockedCarrierChecker.warmingUp(new StackTraceElement[] {
            new StackTraceElement("java.lang.Thread", "sleep", null, -2), loop}));
        assertFalse(BlockedCarrierChecker.warmingUp(new StackTraceElement[] {
            new StackTraceElement("com.fasterxml.jackson.core.json.UTF8JsonGenerator", "writeString", null, -1), loop}),
            "writing JSON is work, not warm-up");
    }

    @Test
    void theReportNamesTheBlockingCallAndTheFiberAlternative() {
        BlockedCarrierChecker watch = new BlockedCarrierChecker(new Carriers(1), 100, 20, 0);
        String t = "kiln-selector";
        StackTraceElement park = new StackTraceElement("java.util.concurrent.locks.LockSupport", "park", "LockSupport.java", 211);
        StackTraceElement io = new StackTraceElement("sun.nio.ch.SocketDispatcher", "read0", null, -2);
        StackTraceElement loop = new StackTraceElement("my.App", "lambda$routes$0", "App.java", 42);
        assertTrue(watch.report("GET /a", t, 150, new StackTraceElement[] {park, loop}).contains("a lock, latch or blocking queue"));
        assertTrue(watch.report("GET /a", t, 150, new StackTraceElement[] {io, loop}).contains("blocked in blocking I/O. In fiber code, run the call with Fibers.blocking"));
        StackTraceElement send = new StackTraceElement("jdk.internal.net.http.HttpClientImpl", "send", "HttpClientImpl.java", 930);
        StackTraceElement get = new StackTraceElement("java.util.concurrent.CompletableFuture", "get", "CompletableFuture.java", 2096);
        String client = watch.report("GET /a", t, 150, new StackTraceElement[] {park, get, send, loop});
        assertTrue(client.contains("blocked in a blocking HttpClient.send. In fiber code, use HttpClient.sendAsync and Fibers.await(future, timeout)"),
            () -> "the most specific advice wins, though the stack parks in a CompletableFuture first: " + client);
        StackTraceElement whenComplete = new StackTraceElement("java.util.concurrent.CompletableFuture", "uniWhenCompleteStage", "CompletableFuture.java", 884);
        StackTraceElement await = new StackTraceElement("kiln.kilim.Fibers", "await", "Fibers.java", 56);
        String awaiting = watch.report("POST /login", t, 150, new StackTraceElement[] {whenComplete, await, loop});
        assertTrue(awaiting.contains("a long computation") && !awaiting.contains("join()/get()"),
            () -> "Fibers.await's own frames are not a blocking join: " + awaiting);
        StackTraceElement join = new StackTraceElement("java.util.concurrent.CompletableFuture", "waitingGet", "CompletableFuture.java", 1864);
        assertTrue(watch.report("GET /a", t, 150, new StackTraceElement[] {park, join, loop}).contains("blocked in CompletableFuture.join()/get()"));
        String busy = watch.report("GET /a", t, 150, new StackTraceElement[] {loop});
        assertTrue(busy.contains("a long computation") && busy.contains("at my.App.lambda$routes$0(App.java:42)"), busy);
        assertTrue(busy.contains("The server handed the carrier's other fibers to a new thread after 20 ms"), busy);
    }
}

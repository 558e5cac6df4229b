package kiln.kilim;

import static kiln.kilim.Fibers.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import kiln.http.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The two ways fiber code waits on things that are not the database, as docs/handlers.md shows them:
 * an outbound HTTP call with {@code HttpClient.sendAsync} and a timeout ({@link Fibers#await(java.util.concurrent.CompletionStage, Duration)}),
 * and a blocking library call run on the bounded pool ({@link Fibers#blocking}). Neither holds the
 * carrier: the blocked-carrier checker never reports them, and nothing is handed off. One carrier.
 */
class FibersTest {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private WatchLog watchLog;
    private final String[] self = new String[1];
    private KilimServer server;

    @BeforeEach
    void start() throws Exception {
        watchLog = WatchLog.start();
        Router router = new Router()
            .get("/fast", req -> Response.text("fast"))
            .get("/slow", req -> {
                Fibers.sleep(Long.parseLong(req.param("ms")));
                return Response.text("slow");
            })
            // docs/handlers.md, "Waiting on anything": an outbound call with a timeout
            .get("/outbound", req -> {
                HttpRequest call = HttpRequest.newBuilder(URI.create(self[0] + "/slow?ms=" + req.param("ms"))).build();
                HttpResponse<String> r = await(HTTP.sendAsync(call, HttpResponse.BodyHandlers.ofString()), Duration.ofMillis(500));
                return Response.text("upstream said " + r.body());
            })
            // docs/handlers.md, "Waiting on anything": a blocking library call through the pool
            .get("/blocking", req -> {
                String thread = Fibers.blocking(() -> {
                    Thread.sleep(1_000);  // stands for a JDBC query, a blocking SMTP client, file I/O
                    return Thread.currentThread().getName();
                });
                return Response.text("ran on " + thread);
            });
        server = new KilimServer("127.0.0.1", 0, 1, router).blockedCarrierThreshold(100);
        server.start();
        self[0] = "http://127.0.0.1:" + server.port();
    }

    @AfterEach
    void stop() {
        watchLog.close();
        server.stop(1_000);
    }

    private CompletableFuture<HttpResponse<String>> get(String target) {
        return HTTP.sendAsync(HttpRequest.newBuilder(URI.create(self[0] + target)).timeout(Duration.ofSeconds(20)).build(),
            HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void anOutboundCallWithinItsTimeoutAnswers() throws Exception {
        HttpResponse<String> r = get("/outbound?ms=10").get();
        assertEquals(200, r.statusCode());
        assertEquals("upstream said slow", r.body());
    }

    @Test
    void anOutboundCallPastItsTimeoutIsA504() throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> r = get("/outbound?ms=3000").get();
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(504, r.statusCode(), r.body());
        assertEquals("504 Gateway Timeout: gateway timeout: no result within 500 ms\n", r.body());
        assertTrue(ms < 2_500, "answered at the timeout, not when the upstream did: " + ms + " ms");
        assertTrue(watchLog.messages.isEmpty(), () -> "the fiber paused, it never held the carrier: " + watchLog.messages);
    }

    @Test
    void aBlockingCallRunsOnThePoolWhileTheCarrierServesOthers() throws Exception {
        CompletableFuture<HttpResponse<String>> blocking = get("/blocking");
        Thread.sleep(200);
        long start = System.nanoTime();
        for (int i = 0; i < 20; i++) assertEquals("fast", get("/fast").get().body());
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(!blocking.isDone(), "the blocking call still runs: the 20 requests were served meanwhile, in " + ms + " ms");
        String body = blocking.get().body();
        assertTrue(body.startsWith("ran on kiln-blocking-"), body);
        assertTrue(watchLog.messages.isEmpty(), () -> "the carrier was never held: " + watchLog.messages);
        assertNull(server.blockedProblem());
    }
}

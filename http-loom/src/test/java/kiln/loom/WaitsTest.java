package kiln.loom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import kiln.http.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The virtual-thread twins of {@code kiln.kilim.Fibers}' waits, as docs/handlers.md shows them: an
 * outbound HTTP call with a timeout ({@link Waits#await}) and a blocking call run on the bounded
 * pool ({@link Waits#blocking}).
 */
class WaitsTest {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final String[] self = new String[1];
    private LoomServer server;

    @BeforeEach
    void start() throws Exception {
        Router router = new Router()
            .get("/slow", req -> {
                Thread.sleep(Long.parseLong(req.param("ms")));  // parks the virtual thread
                return Response.text("slow");
            })
            .get("/outbound", req -> {
                HttpRequest call = HttpRequest.newBuilder(URI.create(self[0] + "/slow?ms=" + req.param("ms"))).build();
                HttpResponse<String> r = Waits.await(HTTP.sendAsync(call, HttpResponse.BodyHandlers.ofString()), Duration.ofMillis(500));
                return Response.text("upstream said " + r.body());
            })
            .get("/blocking", req -> Response.text("ran on " + Waits.blocking(() -> Thread.currentThread().getName())));
        server = new LoomServer("127.0.0.1", 0, router);
        server.start();
        self[0] = "http://127.0.0.1:" + server.port();
    }

    @AfterEach
    void stop() {
        server.stop(1_000);
    }

    private HttpResponse<String> get(String target) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(self[0] + target)).timeout(Duration.ofSeconds(20)).build(),
            HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void anOutboundCallWithinItsTimeoutAnswers() throws Exception {
        HttpResponse<String> r = get("/outbound?ms=10");
        assertEquals(200, r.statusCode());
        assertEquals("upstream said slow", r.body());
    }

    @Test
    void anOutboundCallPastItsTimeoutIsA504() throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> r = get("/outbound?ms=3000");
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(504, r.statusCode(), r.body());
        assertEquals("504 Gateway Timeout: gateway timeout: no result within 500 ms\n", r.body());
        assertTrue(ms < 2_500, "answered at the timeout, not when the upstream did: " + ms + " ms");
    }

    @Test
    void aBlockingCallRunsOnThePool() throws Exception {
        String body = get("/blocking").body();
        assertTrue(body.startsWith("ran on kiln-blocking-"), body);
    }
}

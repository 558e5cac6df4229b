package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * No handler can freeze the server: with one carrier (a one-core VPS, {@code --threads 1}), whose
 * thread is also the selector, a handler that blocks it or spins on it gets its carrier handed to a
 * new thread, and other connections go on being served meanwhile. The bounds asserted here are
 * generous (a shared CI machine); the figures are {@code make bench-traps}'.
 */
class HandOffTest {
    /** Other requests must all be answered within this while the trap holds its thread for {@link #TRAP_MS}: before hand-offs, they waited for the whole trap. */
    private static final long OTHERS_MAX_MS = 1_000;
    private static final long TRAP_MS = 3_000;

    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String[] base = new String[1];
    private KilimServer server;

    @AfterEach
    void stop() {
        if (server != null) server.stop(1_000);
    }

    private void start(long unhealthyMs) throws Exception {
        server = new KilimServer("127.0.0.1", 0, 1, Traps.routes(base)).unhealthyThreshold(unhealthyMs);
        server.start();
        base[0] = "http://127.0.0.1:" + server.port();
    }

    private CompletableFuture<HttpResponse<String>> trap(String target) {
        return client.sendAsync(HttpRequest.newBuilder(URI.create(base[0] + target)).timeout(Duration.ofSeconds(30)).build(),
            HttpResponse.BodyHandlers.ofString());
    }

    /** Starts the trap, then sends 100 other requests on 10 connections while it holds its thread. */
    private void othersAreServedDuring(String target, String answer) throws Exception {
        start(0);
        othersAreServedDuringOn(target, answer);
    }

    /** As {@link #othersAreServedDuring}, on the server started already. */
    private void othersAreServedDuringOn(String target, String answer) throws Exception {
        CompletableFuture<HttpResponse<String>> trap = trap(target);
        Thread.sleep(200);  // the trap's handler holds the one carrier's thread by now
        long[] ms = Traps.roundTripsMs(URI.create(base[0] + "/fast"), 100, 10);
        assertFalse(trap.isDone(), "the trap still holds its thread: the others were served during it");
        assertTrue(ms[ms.length - 1] <= OTHERS_MAX_MS, () -> "100 other requests during " + target + " answered within " + OTHERS_MAX_MS
            + " ms each; round trips (ms, sorted; " + Long.MAX_VALUE + " = failed): " + Arrays.toString(ms));
        assertEquals(answer, trap.get().body(), "and the trap's own request completes");
    }

    /**
     * While nothing runs the watch rests (parked until a carrier wakes, not woken every few
     * milliseconds), and the first trap after its rest is handed off as any other.
     */
    @Test
    void theWatchRestsWhileTheServerIsIdleAndStillHandsOffTheNextTrap() throws Exception {
        start(0);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!server.blockedCarrierWatch().resting()) {
            assertTrue(System.nanoTime() < deadline, "the watch rests within 10 s of an idle server");
            Thread.sleep(10);
        }
        othersAreServedDuringOn("/sleep?ms=" + TRAP_MS, "slept");
    }

    @Test
    void aHandlerInThreadSleepDoesNotDelayOtherConnections() throws Exception {
        othersAreServedDuring("/sleep?ms=" + TRAP_MS, "slept");
    }

    @Test
    void aHandlerInABlockingHttpCallDoesNotDelayOtherConnections() throws Exception {
        othersAreServedDuring("/send?ms=" + TRAP_MS, "sent: slow");
    }

    @Test
    void aHandlerInALongCpuLoopDoesNotDelayOtherConnections() throws Exception {
        othersAreServedDuring("/spin?ms=" + TRAP_MS, "spun true");
    }

    @Test
    void aHandlerThatCallsTheSameServerWithABlockingClientCompletes() throws Exception {
        start(0);
        HttpResponse<String> r = trap("/send?ms=10").get();
        assertEquals("sent: slow", r.body(), "the selector was handed off, so it accepted and served the handler's own call");
    }

    @Test
    void healthReportsAHandlerThatHoldsAThreadBeyondTheLimitWhileItLasts() throws Exception {
        start(500);
        assertNull(server.blockedProblem());
        CompletableFuture<HttpResponse<String>> trap = trap("/sleep?ms=" + TRAP_MS);
        String problem = null;
        for (int i = 0; i < 200 && problem == null; i++) {
            Thread.sleep(10);
            problem = server.blockedProblem();
        }
        assertNotNull(problem, "reported within 2 s of a 500 ms limit");
        String seen = problem;
        assertTrue(seen.startsWith("the handler of GET /sleep has held thread kiln-selector for ") && seen.endsWith("(limit 500 ms)"), seen);
        trap.get();
        for (int i = 0; i < 200 && server.blockedProblem() != null; i++) Thread.sleep(10);
        assertNull(server.blockedProblem(), "healthy again once the handler returned");
    }
}

package kiln.demo;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Asks a server that just started for each of the demo's read-only endpoints once, over loopback,
 * before it says it is ready: a client's first request then does not pay for what the JVM loads,
 * links and compiles on first use. On Comsat it also pays for Quasar instrumenting every class as
 * it loads: a fresh {@code kiln-comsat.jar} answered its first {@code /plaintext} in 0.67 s and its
 * first {@code /json} in 1.26 s (2-core machine under load, 2026-11-28; 4.2 s for a first write on
 * a 1-vCPU box), each later request in under 15 ms.
 *
 * <p>Only endpoints that change nothing and end by themselves: no {@code /updates} (a write), no
 * event stream, no {@code /hello} delay. The requests carry {@code User-Agent: kiln-warm-up}, so an
 * access log shows them for what they are; they count in {@code /metrics} like any request. At most
 * {@value #BUDGET_MS} ms in all: a warm-up never holds a start back for long.
 */
public final class WarmUp {
    private static final Logger LOG = Logger.getLogger(WarmUp.class.getName());
    /** The warm-up's whole budget, ms. */
    static final long BUDGET_MS = 10_000;

    private WarmUp() {
    }

    /** @return whether warming up with {@code e} changes nothing and ends by itself */
    static boolean isSafe(Endpoint e) {
        return e.method.equals("GET") && !e.path.startsWith("/updates") && !e.path.endsWith("/events") && !e.path.startsWith("/hello");
    }

    /**
     * Sends each safe endpoint's example once to {@code 127.0.0.1:port} and waits for its answer.
     *
     * @return how many were answered (any status) within the budget
     */
    public static int run(int port) {
        long started = System.nanoTime();
        long deadline = started + BUDGET_MS * 1_000_000;
        int answered = 0;
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        for (Endpoint e : Endpoints.ALL) {
            long left = deadline - System.nanoTime();
            if (!isSafe(e) || left <= 0) continue;
            HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + e.example))
                .header("User-Agent", "kiln-warm-up").timeout(Duration.ofNanos(left)).GET().build();
            try {
                client.send(request, HttpResponse.BodyHandlers.discarding());
                answered++;
            } catch (java.io.IOException ex) {
                LOG.log(Level.FINE, "warm-up request " + e.example + " failed", ex);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        long ms = (System.nanoTime() - started) / 1_000_000;
        int n = answered;
        LOG.info(() -> "warmed up: " + n + " read-only endpoints served once in " + ms + " ms");
        return answered;
    }
}

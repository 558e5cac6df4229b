package kiln.kilim;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@code make bench-traps}: what other connections see while a handler does the wrong thing, with
 * the carrier hand-off ({@code --hand-off-ms 20}, the default) and without it ({@code 0}: how the
 * server behaved before hand-offs). One carrier ({@code --threads 1}, a one-core VPS), whose thread
 * is also the selector. Per trap: start it, wait 200 ms, then send 100 requests on 10 other
 * keep-alive connections and print their round trips (p50, p99, max, ms) and how long the trap's own
 * request took. About 80 s.
 */
public final class TrapBench {
    private static final int REQUESTS = 100;
    private static final int CONNECTIONS = 10;

    private TrapBench() {
    }

    public static void main(String[] args) throws Exception {
        Logger.getLogger("kiln").setLevel(Level.SEVERE);  // the blocked-carrier checker's reports are expected here
        String[][] traps = {
            {"/sleep?ms=10000", "Thread.sleep(10 s)"},
            {"/send?ms=10000", "HttpClient.send to itself (10 s)"},
            {"/spin?ms=2000", "CPU loop (2 s)"},
        };
        System.out.printf("%-34s %-12s %10s %10s %10s %8s %12s%n", "trap (one carrier)", "hand-off", "p50 ms", "p99 ms", "max ms",
            "failed", "trap took");
        for (String[] trap : traps) {
            for (long handOffMs : new long[] {0, 20}) {
                String[] base = new String[1];
                KilimServer server = new KilimServer("127.0.0.1", 0, 1, Traps.routes(base)).handOffThreshold(handOffMs);
                server.start();
                try {
                    base[0] = "http://127.0.0.1:" + server.port();
                    warmUp(URI.create(base[0] + "/fast"));
                    HttpClient client = HttpClient.newHttpClient();
                    long start = System.nanoTime();
                    CompletableFuture<HttpResponse<String>> held = client.sendAsync(
                        HttpRequest.newBuilder(URI.create(base[0] + trap[0])).timeout(Duration.ofSeconds(40)).build(),
                        HttpResponse.BodyHandlers.ofString());
                    Thread.sleep(200);
                    long[] ms = Traps.roundTripsMs(URI.create(base[0] + "/fast"), REQUESTS, CONNECTIONS);
                    HttpResponse<String> r = held.get();
                    long tookMs = (System.nanoTime() - start) / 1_000_000;
                    long failed = Arrays.stream(ms).filter(v -> v == Long.MAX_VALUE).count();
                    System.out.printf("%-34s %-12s %10s %10s %10s %8d %9d ms%s%n", trap[1], handOffMs == 0 ? "off (before)" : handOffMs + " ms",
                        fmt(Traps.percentile(ms, 50)), fmt(Traps.percentile(ms, 99)), fmt(ms[ms.length - 1]), failed, tookMs,
                        r.statusCode() == 200 ? "" : " (" + r.statusCode() + ")");
                } finally {
                    server.stop(1_000);
                }
            }
        }
    }

    private static void warmUp(URI fast) throws Exception {
        Traps.roundTripsMs(fast, 2_000, CONNECTIONS);
    }

    private static String fmt(long ms) {
        return ms == Long.MAX_VALUE ? "failed" : Long.toString(ms);
    }
}

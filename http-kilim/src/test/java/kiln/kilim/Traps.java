package kiln.kilim;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import kiln.http.Response;

/**
 * The wrong code a user may put in a fiber handler, as routes, and the other requests that must not
 * suffer for it: shared by {@link HandOffTest} (which asserts) and {@link TrapBench} (which prints).
 * <ul>
 *   <li>{@code GET /sleep?ms=N}: {@code Thread.sleep(N)} on the carrier;</li>
 *   <li>{@code GET /send?ms=N}: a blocking {@code HttpClient.send} to this same server's
 *       {@code /slow?ms=N}, a fiber that pauses N ms (with hand-offs it completes; without, the
 *       selector that should accept that request is the thread blocked in {@code send});</li>
 *   <li>{@code GET /spin?ms=N}: a CPU loop of N ms;</li>
 *   <li>{@code GET /fast}: the other requests.</li>
 * </ul>
 */
final class Traps {
    private static final HttpClient SELF = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private Traps() {
    }

    /** @return the routes above; {@code self} is the server's base URI, known once it listens */
    static Router routes(String[] self) {
        return new Router()
            .get("/fast", req -> Response.text("fast"))
            .get("/slow", req -> {
                Fibers.sleep(ms(req.param("ms")));
                return Response.text("slow");
            })
            .get("/sleep", req -> {
                Thread.sleep(ms(req.param("ms")));  // the trap
                return Response.text("slept");
            })
            .get("/send", req -> {
                long ms = ms(req.param("ms"));
                HttpRequest call = HttpRequest.newBuilder(URI.create(self[0] + "/slow?ms=" + ms)).timeout(Duration.ofMillis(ms + 5_000)).build();
                return Response.text("sent: " + SELF.send(call, HttpResponse.BodyHandlers.ofString()).body());  // the trap
            })
            .get("/spin", req -> {
                long end = System.nanoTime() + ms(req.param("ms")) * 1_000_000;
                long n = 0;
                while (System.nanoTime() < end) n++;  // the trap
                return Response.text("spun " + (n > 0));
            });
    }

    private static long ms(String value) {
        return value == null ? 0 : Long.parseLong(value);
    }

    /**
     * Sends {@code requests} GETs of {@code uri} over {@code connections} keep-alive connections at
     * once (each its own client), each connection's requests one after another.
     *
     * @return each request's round trip, ms, sorted; a request that failed or was not 200 counts as
     *         {@code Long.MAX_VALUE}
     */
    static long[] roundTripsMs(URI uri, int requests, int connections) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(connections);
        try {
            List<Future<long[]>> each = new ArrayList<>();
            for (int c = 0; c < connections; c++) {
                int n = requests / connections + (c < requests % connections ? 1 : 0);
                each.add(pool.submit(() -> {
                    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(20)).build();
                    long[] ms = new long[n];
                    for (int i = 0; i < n; i++) {
                        long start = System.nanoTime();
                        try {
                            HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(20)).build(),
                                HttpResponse.BodyHandlers.ofString());
                            ms[i] = r.statusCode() == 200 ? (System.nanoTime() - start) / 1_000_000 : Long.MAX_VALUE;
                        } catch (Exception e) {
                            ms[i] = Long.MAX_VALUE;
                        }
                    }
                    return ms;
                }));
            }
            long[] all = new long[0];
            for (Future<long[]> f : each) {
                long[] ms = f.get();
                int at = all.length;
                all = Arrays.copyOf(all, at + ms.length);
                System.arraycopy(ms, 0, all, at, ms.length);
            }
            Arrays.sort(all);
            return all;
        } finally {
            pool.shutdownNow();
        }
    }

    /** @return the {@code p}-th percentile (0..100) of sorted {@code ms}, nearest rank */
    static long percentile(long[] ms, double p) {
        int rank = (int) Math.ceil(p / 100 * ms.length);
        return ms[Math.max(0, rank - 1)];
    }
}

package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import kiln.server.Metrics;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code GET /metrics} on every front end: the Prometheus text format, and series that move with
 * what the front end serves (requests by route template and status, open connections, database
 * commits), plus the JVM's memory. Each front end records requests where it hands the response to its
 * server library, so this is where a front end that forgot to is caught.
 */
class MetricsTest {
    @RegisterExtension
    static final Servers SERVERS = new Servers("MetricsTest");

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    /** @return every sample of a scrape, {@code name{labels}} to value, as the text format spells them */
    private static Map<String, Double> scrape(RawConnection c) {
        RawResponse r = c.exchange(RawConnection.get("/metrics"));
        assertEquals(200, r.status, r::bodyText);
        assertEquals(Metrics.CONTENT_TYPE, r.header("Content-Type"));
        return Contract.metricSamples(r.body);
    }

    private static double rise(Map<String, Double> before, Map<String, Double> after, String series) {
        return after.getOrDefault(series, 0.0) - before.getOrDefault(series, 0.0);
    }

    private static int status(RawConnection c, String target) {
        return c.exchange(RawConnection.get(target)).status;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void requestsAreCountedByRouteTemplateAndStatus(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            Map<String, Double> before = scrape(c);
            assertEquals(200, status(c, "/worlds/7"));
            assertEquals(200, status(c, "/worlds/8"));
            assertEquals(404, status(c, "/worlds/0"));
            assertEquals(404, status(c, "/no/such/path"));
            assertEquals(200, status(c, "/plaintext"));
            Map<String, Double> after = scrape(c);

            assertEquals(2.0, rise(before, after, "http_requests_total{endpoint=\"/worlds/{id}\",status=\"200\"}"), after::toString);
            assertEquals(1.0, rise(before, after, "http_requests_total{endpoint=\"/worlds/{id}\",status=\"404\"}"));
            assertEquals(1.0, rise(before, after, "http_requests_total{endpoint=\"unmatched\",status=\"404\"}"));
            assertEquals(1.0, rise(before, after, "http_requests_total{endpoint=\"/plaintext\",status=\"200\"}"));
            assertEquals(1.0, rise(before, after, "http_requests_total{endpoint=\"/metrics\",status=\"200\"}"),
                "the scrape before is counted too");
            assertEquals(3.0, rise(before, after, "http_request_duration_seconds_count{endpoint=\"/worlds/{id}\"}"));
            assertFalse(after.keySet().stream().anyMatch(k -> k.contains("/worlds/7") || k.contains("/no/such")),
                "raw paths are no label values");
        }
    }

    /**
     * The gauge rises with each connection and falls back by exactly as many when they close (a
     * close counted twice once made Undertow's gauge, and so its cap report, fall short). Closes
     * reach the server asynchronously: the count is read until it settles, for at most
     * {@value #SETTLE_WITHIN_MS} ms.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void openConnectionsRiseAndFallWithTheClients(FrontEnd fe) throws InterruptedException {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            double open = settledOpenConnections(c, -1);
            assertTrue(open >= 1, "this connection is open: " + open);
            List<RawConnection> more = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    RawConnection another = RawConnection.open(SERVERS.get(fe));
                    more.add(another);
                    assertEquals(200, status(another, "/plaintext"));
                }
                double all = scrape(c).get("http_connections_open");
                assertEquals(open + 3, all, "three more connections open");
            } finally {
                for (RawConnection another : more) another.close();
            }
            assertEquals(open, settledOpenConnections(c, open), "the three closed");
        }
    }

    private static final long SETTLE_WITHIN_MS = 5_000;

    /** @return http_connections_open once it reads {@code expected}, or once two reads 200 ms apart agree (or after {@value #SETTLE_WITHIN_MS} ms) */
    private static double settledOpenConnections(RawConnection c, double expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_WITHIN_MS);
        Double last = null;
        while (true) {
            Double open = scrape(c).get("http_connections_open");
            assertNotNull(open, "http_connections_open has a sample");
            if (open == expected || open.equals(last) || System.nanoTime() > deadline) return open;
            last = open;
            Thread.sleep(200);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void databaseCommitsRiseAfterUpdates(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            Map<String, Double> before = scrape(c);
            assertEquals(200, status(c, "/updates?queries=3"));
            assertEquals(200, status(c, "/updates?queries=3"));
            Map<String, Double> after = scrape(c);
            double commits = rise(before, after, "kiln_db_commits_total");
            assertTrue(commits >= 1 && commits <= 2, "each /updates is answered after its commit: " + commits);
            assertEquals(commits, rise(before, after, "kiln_db_commit_batch_size_count"), "one batch size per commit");
            assertTrue(rise(before, after, "kiln_db_commit_batch_size_sum") >= 2, "both writes in committed batches");
            assertTrue(after.get("kiln_db_map_used_bytes") > 0);
            assertTrue(after.get("kiln_db_map_size_bytes") >= after.get("kiln_db_map_used_bytes"));
            assertEquals(0.0, after.get("kiln_db_write_queue_depth"));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void jvmMemoryIsExposed(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            Map<String, Double> samples = scrape(c);
            assertTrue(samples.getOrDefault("jvm_memory_used_bytes{area=\"heap\"}", 0.0) > 0, samples::toString);
            assertTrue(samples.containsKey("jvm_memory_max_bytes{area=\"heap\"}"));
            assertTrue(samples.getOrDefault("process_resident_memory_bytes", 0.0) > 0);
        }
    }

    /** HEAD /metrics: the GET's head (its own Content-Length: the scrape's size then), no body. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void headOfMetricsIsTheHeadOnly(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse head = c.send("HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").readHeadOnly();
            assertEquals(200, head.status);
            assertEquals(Metrics.CONTENT_TYPE, head.header("Content-Type"));
            assertTrue(Integer.parseInt(head.header("Content-Length")) > 1000, head.head);
            assertEquals("HTTP/1.1 200 OK", c.exchange(RawConnection.get("/plaintext")).statusLine,
                "no body followed the HEAD answer: the next response starts right after its head");
        }
    }
}

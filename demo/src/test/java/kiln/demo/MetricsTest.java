package kiln.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import kiln.db.Db;
import kiln.db.DbStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import kiln.http.Response;
import kiln.server.Metrics;
import kiln.server.ServerOptions;
import kiln.server.Step;

/** The metrics registry: what {@code /metrics} answers, parsed as Prometheus would, before and after requests. */
class MetricsTest {
    @TempDir Path dir;
    private Db db;
    private Served endpoints;

    @BeforeEach
    void open() {
        db = Db.open(dir);
        endpoints = new Served(DemoDb.open(db));
    }

    @AfterEach
    void close() {
        db.close();
    }

    /** @return every sample of a scrape, {@code name{labels}} to value, in the text format's own spelling */
    static Map<String, Double> samples(byte[] scrape) {
        Map<String, Double> samples = new HashMap<>();
        for (String line : new String(scrape, StandardCharsets.UTF_8).split("\n")) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            int space = line.lastIndexOf(' ');
            samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
        }
        return samples;
    }

    private Map<String, Double> scrape() {
        Response r = Step.runBlocking(endpoints.start("GET", "/metrics", null));
        assertEquals(200, r.status);
        return samples(r.body);
    }

    /** Runs a request the way a library front end does, recording it as its response is sent. */
    private Response request(String method, String path, String rawQuery) {
        return endpoints.request(method, path, rawQuery);
    }

    private static double value(Map<String, Double> samples, String series) {
        return samples.getOrDefault(series, 0.0);
    }

    @Test
    void metricsAnswersThePrometheusTextFormatUncached() {
        request("GET", "/plaintext", null);
        Response r = Step.runBlocking(endpoints.start("GET", "/metrics", null));
        assertEquals(200, r.status);
        assertEquals("text/plain; version=0.0.4; charset=utf-8", r.contentType);
        assertEquals("Cache-Control", r.headerName(0));
        assertEquals("no-store", r.headerValue(0));
        String text = new String(r.body, StandardCharsets.UTF_8);
        assertTrue(text.contains("# TYPE http_requests_total counter\n"), text);
        assertTrue(text.contains("\nhttp_requests_total{endpoint=\"/plaintext\",status=\"200\"} 1.0\n"), text);
        assertTrue(text.contains("# TYPE http_request_duration_seconds histogram\n"), text);
        assertTrue(text.contains("# TYPE kiln_db_commit_batch_size histogram\n"), text);
    }

    @Test
    void requestsAreCountedByRouteTemplateAndStatusAndTimed() {
        String worlds200 = "http_requests_total{endpoint=\"/worlds/{id}\",status=\"200\"}";
        String worlds404 = "http_requests_total{endpoint=\"/worlds/{id}\",status=\"404\"}";
        String unmatched404 = "http_requests_total{endpoint=\"unmatched\",status=\"404\"}";
        String unmatched405 = "http_requests_total{endpoint=\"unmatched\",status=\"405\"}";
        String worldsTimed = "http_request_duration_seconds_count{endpoint=\"/worlds/{id}\"}";
        Map<String, Double> before = scrape();
        assertEquals(0.0, value(before, worldsTimed), "every route's histogram is there from the start");
        assertTrue(before.containsKey(worldsTimed), before::toString);

        assertEquals(200, request("GET", "/worlds/42", null).status);
        assertEquals(200, request("GET", "/worlds/7", null).status);
        assertEquals(200, request("HEAD", "/worlds/7", null).status);
        assertEquals(404, request("GET", "/worlds/0", null).status);
        assertEquals(404, request("GET", "/no/such/path", null).status);
        assertEquals(404, request("GET", "/another/one", null).status);
        assertEquals(405, request("POST", "/plaintext", null).status);

        Map<String, Double> after = scrape();
        assertEquals(3.0, value(after, worlds200) - value(before, worlds200), "one series for every id: " + after);
        assertEquals(1.0, value(after, worlds404) - value(before, worlds404));
        assertEquals(2.0, value(after, unmatched404) - value(before, unmatched404), "unknown paths share one label value");
        assertEquals(1.0, value(after, unmatched405) - value(before, unmatched405));
        assertFalse(after.keySet().stream().anyMatch(k -> k.contains("/worlds/42") || k.contains("/no/such")),
            "no raw path becomes a label value");
        assertEquals(4.0, value(after, worldsTimed));
        double sum = value(after, "http_request_duration_seconds_sum{endpoint=\"/worlds/{id}\"}");
        assertTrue(sum > 0 && sum < 10, "seconds, not nanoseconds: " + sum);
        assertEquals(4.0, value(after, "http_request_duration_seconds_bucket{endpoint=\"/worlds/{id}\",le=\"+Inf\"}"));
    }

    @Test
    void databaseFiguresComeFromItsOwnCounters() {
        Map<String, Double> before = scrape();
        assertEquals(200, request("GET", "/updates", "queries=5").status);
        assertEquals(200, request("GET", "/updates", "queries=5").status);
        assertEquals(200, request("GET", "/db", null).status);
        Map<String, Double> after = scrape();
        DbStats stats = db.stats();

        double commits = value(after, "kiln_db_commits_total");
        assertTrue(commits - value(before, "kiln_db_commits_total") >= 1, "each durable /updates commits: " + after);
        assertEquals(stats.commits, commits);
        assertEquals(commits, value(after, "kiln_db_commit_batch_size_count"), "one observation per commit");
        assertEquals(stats.batchedWrites, value(after, "kiln_db_commit_batch_size_sum"));
        assertEquals(commits, value(after, "kiln_db_commit_batch_size_bucket{le=\"+Inf\"}"));
        assertTrue(value(after, "kiln_db_commit_batch_size_bucket{le=\"1024.0\"}") <= commits);
        assertEquals(stats.mapSize, value(after, "kiln_db_map_size_bytes"));
        double used = value(after, "kiln_db_map_used_bytes");
        assertTrue(used > 0 && used <= stats.mapSize, "used " + used + " of " + stats.mapSize);
        assertEquals(0.0, value(after, "kiln_db_write_queue_depth"));
        assertTrue(after.containsKey("kiln_db_write_queue_depth"));
        assertEquals(stats.readSlots, value(after, "kiln_db_read_slots"));
        assertEquals(0.0, value(after, "kiln_db_read_txns_in_use"), "no read runs between two requests");
        double pooled = value(after, "kiln_db_read_txns_pooled");
        assertTrue(pooled >= 1 && pooled <= stats.readSlots, "the reads of /db left a transaction in the pool: " + pooled);
    }

    @Test
    void openConnectionsComeFromTheFrontEndAndJvmMemoryIsThere() {
        Map<String, Double> without = scrape();
        assertFalse(without.containsKey("http_connections_open"), "no sample before a front end says how many");
        int[] open = {3};
        endpoints.metrics().connections(() -> open[0]);
        assertEquals(3.0, scrape().get("http_connections_open"));
        open[0] = 1;
        Map<String, Double> now = scrape();
        assertEquals(1.0, now.get("http_connections_open"), "read at scrape time");
        assertTrue(now.get("jvm_memory_used_bytes{area=\"heap\"}") > 0, now::toString);
        assertTrue(now.containsKey("jvm_memory_max_bytes{area=\"heap\"}"));
    }

    @Test
    void offRecordsNothingAndMetricsIs404() {
        Served off = new Served(DemoDb.open(db), Metrics.off());
        assertFalse(off.metrics().isOn());
        assertEquals(0, off.metrics().start(), "no clock read when off");
        assertEquals(200, off.request("GET", "/plaintext", null).status);
        Response metrics = Step.runBlocking(off.start("GET", "/metrics", null));
        assertEquals(404, metrics.status);
        assertTrue(new String(metrics.body, StandardCharsets.UTF_8).contains("--no-metrics"));
        assertTrue(ServerOptions.of().metrics(db).isOn(), "on by default");
        assertFalse(ServerOptions.of("--no-metrics").metrics(db).isOn());
    }
}

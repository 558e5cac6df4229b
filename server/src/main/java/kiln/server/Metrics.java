package kiln.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntSupplier;

import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.instrumentation.jvm.JvmGarbageCollectorMetrics;
import io.prometheus.metrics.instrumentation.jvm.JvmMemoryMetrics;
import io.prometheus.metrics.instrumentation.jvm.ProcessMetrics;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;
import kiln.db.Db;
import kiln.db.DbStats;
import kiln.http.Response;
import kiln.http.spi.MemoryBudget;

/**
 * A server's metrics, in the Prometheus text format ({@code GET /metrics}), through the Prometheus
 * Java client. Written once for every front end; a front end only records each request where it
 * hands the response to its server library, and says how many connections are open:
 *
 * <pre>{@code
 * Metrics.Route plaintext = metrics.route("/plaintext");   // once, when the route is registered
 * long started = metrics.start();                          // per request, before it is routed
 * ...
 * plaintext.record(response.status, started);                 // once, with the response
 * }</pre>
 *
 * <h2>Series</h2>
 * <ul>
 *   <li>{@code http_requests_total{endpoint,status}}: requests answered, by route template
 *       ({@code /worlds/{id}}, not the path asked, so that the series stay few) and status;
 *       {@value #UNMATCHED} for a request no route has (404, 405). Requests refused before routing
 *       (malformed: 400, 408, 413, 414, 431, 505; over the connection cap: 503) are not counted.</li>
 *   <li>{@code http_request_duration_seconds{endpoint}}: histogram of the time from routing to the
 *       response handed to the server library (the handler's time, waits for the database included;
 *       not the socket write).</li>
 *   <li>{@code http_connections_open}: client connections open now, as the front end counts them.</li>
 *   <li>{@code http_streams_open}, {@code http_streams_ended_total{reason}}: streamed responses
 *       (server-sent events) being sent now, and those that ended, by why ({@link kiln.http.StreamEnd}): a
 *       {@code client} that went away, a {@code timeout} writing to a client that does not read, the
 *       server's {@code stop}, an {@code error} in the body, or {@code complete}.</li>
 *   <li>{@code kiln_request_memory_bytes}, {@code kiln_request_memory_peak_bytes},
 *       {@code kiln_request_memory_limit_bytes}: the request bytes the connections hold beyond their
 *       first KiB, now and at most, and their limit ({@code --max-request-memory});
 *       {@code kiln_limits{limit}}: the limits in force ({@link ServerLimits}, a client's shares as
 *       enforced); {@code kiln_refused_total{limit}}: connections and requests a limit refused
 *       ({@code request_memory}, {@code client_connections}, {@code client_streams}, {@code streams}).</li>
 *   <li>{@code kiln_db_commits_total}, {@code kiln_db_commit_batch_size} (histogram of writes per
 *       commit), {@code kiln_db_write_queue_depth}, {@code kiln_db_map_size_bytes},
 *       {@code kiln_db_map_used_bytes}: the database's own counters ({@link Db#stats}), read at
 *       scrape time.</li>
 *   <li>{@code jvm_memory_*}, {@code jvm_gc_collection_seconds}, {@code process_*}: the client's
 *       JVM and process metrics.</li>
 * </ul>
 * Names and units follow the Prometheus conventions (https://prometheus.io/docs/practices/naming/).
 *
 * <p>Cost per request: two {@link System#nanoTime} reads, one counter increment and one histogram
 * observation on children resolved in advance; no allocation, no lookup by name.
 * {@code --no-metrics} ({@link #off()}) turns recording off.
 */
public final class Metrics {
    /** Content-Type of {@code /metrics}: the Prometheus text format, version 0.0.4. */
    public static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;
    /** The {@code endpoint} label of requests no route matched (404, 405). */
    public static final String UNMATCHED = "unmatched";

    /** Upper bounds of {@code http_request_duration_seconds}, s: 100 µs to 10 s. */
    private static final double[] DURATION_BOUNDS =
        {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    /** Buckets of {@code kiln_db_commit_batch_size}: 1, 2, 4, ... 1024 writes (the default largest batch), then +Inf. */
    private static final int BATCH_BUCKETS = 11;
    /** Statuses with a child resolved in advance: 100..599. */
    private static final int FIRST_STATUS = 100;
    private static final int STATUSES = 500;

    private static final Metrics OFF = new Metrics();

    private final PrometheusRegistry registry;
    private final Counter requests;
    private final Histogram duration;
    private final Route unmatched;
    private volatile IntSupplier openConnections;
    private final Counter streamsEnded;
    private final AtomicInteger streamsOpen = new AtomicInteger();
    /** The router's limits, read at scrape time ({@link #limits}). */
    private volatile ServerLimits limits;
    private volatile ClientLimits clients;
    private volatile MemoryBudget requestMemory;

    private Metrics() {
        registry = null;
        requests = null;
        duration = null;
        streamsEnded = null;
        unmatched = new Route();
    }

    private Metrics(Db db) {
        registry = new PrometheusRegistry();
        requests = Counter.builder().name("http_requests_total")
            .help("HTTP requests answered, by route template and status")
            .labelNames("endpoint", "status").withoutExemplars().register(registry);
        duration = Histogram.builder().name("http_request_duration_seconds").unit(Unit.SECONDS)
            .help("Time from routing a request to handing its response to the server, by route template")
            .labelNames("endpoint").classicOnly().classicUpperBounds(DURATION_BOUNDS).withoutExemplars().register(registry);
        GaugeWithCallback.builder().name("http_connections_open")
            .help("Client connections open now")
            .callback(callback -> {
                IntSupplier open = openConnections;
                if (open != null) callback.call(open.getAsInt());
            }).register(registry);
        GaugeWithCallback.builder().name("http_streams_open")
            .help("Streamed responses (server-sent events) being sent now")
            .callback(callback -> callback.call(streamsOpen.get())).register(registry);
        streamsEnded = Counter.builder().name("http_streams_ended_total")
            .help("Streamed responses that ended, by reason: complete, client (went away), timeout (did not read), stop, error")
            .labelNames("reason").withoutExemplars().register(registry);
        GaugeWithCallback.builder().name("kiln_request_memory_bytes")
            .help("Request bytes the connections hold now beyond their first KiB (heads, contents until answered)")
            .callback(callback -> callback.call(requestMemory.used())).register(registry);
        GaugeWithCallback.builder().name("kiln_request_memory_peak_bytes")
            .help("The most request bytes the connections held at once since the start")
            .callback(callback -> callback.call(requestMemory.peak())).register(registry);
        GaugeWithCallback.builder().name("kiln_request_memory_limit_bytes")
            .help("The most request bytes the connections may hold at once (--max-request-memory); beyond, 503")
            .callback(callback -> {
                if (requestMemory.limit() != Long.MAX_VALUE) callback.call(requestMemory.limit());
            }).register(registry);
        GaugeWithCallback.builder().name("kiln_limits")
            .help("The limits in force, by name with their unit: max_connections, max_client_connections, max_streams, max_client_streams,"
                + " max_content_bytes, header_timeout_seconds, idle_timeout_seconds, min_request_rate_bytes_per_second,"
                + " min_response_rate_bytes_per_second, min_rate_grace_seconds")
            .labelNames("limit")
            .callback(callback -> {
                ServerLimits l = limits;
                ClientLimits c = clients;
                callback.call(l.maxConnections(), "max_connections");
                callback.call(c.maxClientConnections(), "max_client_connections");
                if (c.maxStreams() != Integer.MAX_VALUE) callback.call(c.maxStreams(), "max_streams");
                callback.call(c.maxClientStreams(), "max_client_streams");
                callback.call(l.maxContentBytes(), "max_content_bytes");
                callback.call(l.headerTimeoutMs() / 1000.0, "header_timeout_seconds");
                callback.call(l.idleTimeoutMs() / 1000.0, "idle_timeout_seconds");
                callback.call(l.minRequestRate(), "min_request_rate_bytes_per_second");
                callback.call(l.minResponseRate(), "min_response_rate_bytes_per_second");
                callback.call(l.rateGraceMs() / 1000.0, "min_rate_grace_seconds");
            }).register(registry);
        CounterWithCallback.builder().name("kiln_refused_total")
            .help("Connections and requests refused by a limit, by which: request_memory, client_connections, client_streams, streams")
            .labelNames("limit")
            .callback(callback -> {
                long[] byClients = clients.refusals();
                callback.call(requestMemory.refusals(), "request_memory");
                callback.call(byClients[0], "client_connections");
                callback.call(byClients[1], "client_streams");
                callback.call(byClients[2], "streams");
            }).register(registry);
        registry.register(new DbCollector(db));
        JvmMemoryMetrics.builder().register(registry);
        JvmGarbageCollectorMetrics.builder().register(registry);
        ProcessMetrics.builder().register(registry);
        unmatched = new Route(UNMATCHED);
    }

    /**
     * The metrics of an app's router, served at {@code /metrics} by {@link Operations#addTo}:
     * {@code Operations.addTo(new Router(Metrics.create(db)), db)}. Each call registers its series in
     * a registry of its own: make one per server.
     *
     * @param db the database whose writer, reads, feeds and engine are reported
     * @return metrics for a server over {@code db}: requests, connections, the database, the JVM
     */
    public static Metrics create(Db db) {
        return new Metrics(db);
    }

    /** @return metrics that record nothing, and whose {@link #response} is 404 ({@code --no-metrics}) */
    public static Metrics off() {
        return OFF;
    }

    /** @return false for {@link #off()} */
    public boolean isOn() {
        return registry != null;
    }

    /**
     * @param endpoint a route's path as registered, e.g. {@code /worlds/{id}}
     * @return the series of the requests it answers; resolve it once, when the route is registered
     */
    public Route route(String endpoint) {
        return isOn() ? new Route(endpoint) : unmatched;
    }

    /** @return the series of requests no route matched: endpoint {@value #UNMATCHED} */
    public Route unmatched() {
        return unmatched;
    }

    /** @return the time a request starts, for {@link Route#record}: {@link System#nanoTime}, or 0 when off */
    public long start() {
        return isOn() ? System.nanoTime() : 0;
    }

    /**
     * Sets where {@code http_connections_open} comes from: read at each scrape, on the scraping
     * thread; the last call wins. Without one, the series has no sample.
     *
     * @param open the client connections open now, e.g. {@code connections::count}
     */
    public void connections(IntSupplier open) {
        openConnections = open;
    }

    /**
     * Sets where the limits' series come from ({@code kiln_request_memory_*}, {@code kiln_refused_total}):
     * the router's, read at each scrape; the last call wins.
     */
    void limits(ServerLimits limits, ClientLimits clients, MemoryBudget requestMemory) {
        this.limits = limits;
        this.clients = clients;
        this.requestMemory = requestMemory;
    }

    /** A streamed response begins: counted in {@code http_streams_open} until {@link #streamEnded}. */
    public void streamStarted() {
        streamsOpen.incrementAndGet();
    }

    /** @param reason why it ended, one of {@link kiln.http.StreamEnd}'s reasons: the label of {@code http_streams_ended_total} */
    public void streamEnded(String reason) {
        streamsOpen.decrementAndGet();
        if (streamsEnded != null) streamsEnded.labelValues(reason).inc();
    }

    /** @return every series now, in the Prometheus text format 0.0.4 (UTF-8) */
    public byte[] scrape() {
        if (!isOn()) throw new IllegalStateException("metrics are off");
        ByteArrayOutputStream out = new ByteArrayOutputStream(16 * 1024);
        try {
            PrometheusTextFormatWriter.create().write(out, registry.scrape());
        } catch (IOException e) {
            throw new UncheckedIOException("unreachable: writing to memory", e);
        }
        return out.toByteArray();
    }

    /** @return the answer to {@code GET /metrics}: the scrape, or 404 when the metrics are off */
    public Response response() {
        if (!isOn()) return Response.error(404, "metrics are off (--no-metrics)");
        return Response.ok(CONTENT_TYPE, scrape());
    }

    /**
     * The series of one route: its requests by status and its duration histogram, resolved in
     * advance so that recording a request looks nothing up by name. Thread-safe.
     */
    public final class Route {
        private final String endpoint;
        /** The counter's child for each status 100..599, resolved on the first request with it. */
        private final AtomicReferenceArray<CounterDataPoint> byStatus;
        private final DistributionDataPoint time;

        /** The route of {@link #off()}: records nothing. */
        private Route() {
            endpoint = null;
            byStatus = null;
            time = null;
        }

        private Route(String endpoint) {
            this.endpoint = endpoint;
            byStatus = new AtomicReferenceArray<>(STATUSES);
            time = duration.labelValues(endpoint);
        }

        /**
         * Counts one request answered with {@code status} and observes its duration.
         *
         * @param status  the response's status, e.g. 200
         * @param started what {@link Metrics#start()} returned when the request started
         */
        public void record(int status, long started) {
            if (time == null) return;
            long nanos = System.nanoTime() - started;
            requests(status).inc();
            time.observe(Unit.nanosToSeconds(nanos));
        }

        private CounterDataPoint requests(int status) {
            int i = status - FIRST_STATUS;
            if (i < 0 || i >= STATUSES) return requests.labelValues(endpoint, Integer.toString(status));
            CounterDataPoint c = byStatus.get(i);
            if (c == null) {
                // labelValues returns the one child of these labels, so a race only resolves it twice
                c = requests.labelValues(endpoint, Integer.toString(status));
                byStatus.set(i, c);
            }
            return c;
        }

        @Override
        public String toString() {
            return endpoint == null ? "Route{off}" : "Route{" + endpoint + '}';
        }
    }

    /** The database's own counters ({@link Db#stats}), read once per scrape. */
    private static final class DbCollector implements MultiCollector {
        private final Db db;

        DbCollector(Db db) {
            this.db = db;
        }

        @Override
        public MetricSnapshots collect() {
            DbStats s = db.stats();
            long[] byBatchSize = s.commitsByBatchSize();
            double[] bounds = new double[BATCH_BUCKETS + 1];
            long[] counts = new long[BATCH_BUCKETS + 1];
            for (int i = 0; i < byBatchSize.length; i++) {
                int bucket = Math.min(i, BATCH_BUCKETS);  // larger batches: +Inf
                counts[bucket] += byBatchSize[i];
                if (i < BATCH_BUCKETS) bounds[i] = DbStats.batchSizeUpperBound(i);
            }
            bounds[BATCH_BUCKETS] = Double.POSITIVE_INFINITY;
            return MetricSnapshots.of(
                CounterSnapshot.builder().name("kiln_db_commits")
                    .help("Durable write transactions committed, one fsync each (group commit)")
                    .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(s.commits).build()).build(),
                CounterSnapshot.builder().name("kiln_db_write_conflicts")
                    .help("Batches of writes run again because another server's writes committed first (PostgreSQL serialization failures)")
                    .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(s.conflicts).build()).build(),
                HistogramSnapshot.builder().name("kiln_db_commit_batch_size")
                    .help("Writes per commit: how many writes one fsync made durable")
                    .dataPoint(HistogramSnapshot.HistogramDataPointSnapshot.builder()
                        .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, counts)).sum(s.batchedWrites).build()).build(),
                gauge("kiln_db_write_queue_depth", null, "Writes waiting for the database's writer thread", s.queued),
                gauge("kiln_db_map_size_bytes", Unit.BYTES, "Size of LMDB's memory map: the most the database may hold", s.mapSize),
                gauge("kiln_db_map_used_bytes", Unit.BYTES, "Bytes of the memory map up to the last page in use", s.usedBytes),
                gauge("kiln_db_read_txns_in_use", null, "Read transactions running a query now", s.readTxnsInUse),
                gauge("kiln_db_read_txns_pooled", null, "Read transactions kept open for the next reads (each holds a reader slot)", s.readTxnsPooled),
                gauge("kiln_db_read_slots", null, "Reader slots this process may hold, in use and pooled (--db-max-readers less 8)", s.readSlots));
        }

        private static GaugeSnapshot gauge(String name, Unit unit, String help, double value) {
            GaugeSnapshot.Builder b = GaugeSnapshot.builder().name(name).help(help);
            if (unit != null) b.unit(unit);
            return b.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(value).build()).build();
        }
    }
}

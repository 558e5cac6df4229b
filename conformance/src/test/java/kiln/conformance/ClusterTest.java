package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * {@code make cluster} as shipped (scripts/cluster.sh, deploy/nginx/kiln-cluster.conf), and the fault
 * suite over it: two PostgreSQL servers under Patroni (etcd holds the leader lease; synchronous
 * replication), HAProxy sending kiln to the lease holder, two Kilim servers, nginx in front, on free
 * loopback ports. First a commit through one server reaches a subscriber of the other, and a kiln
 * server killed under load through nginx loses no request. Then one fault at a time, Jepsen-style:
 * clients on both servers record every {@code /updates} they send while the fault is injected and
 * healed, and afterwards both servers' change feeds are read over the run:
 * <ul>
 *   <li>lost: an acknowledged write missing from the feed (must be 0);</li>
 *   <li>duplicated: an acknowledged write in the feed twice (must be 0; the clients never retry);</li>
 *   <li>the two servers' feeds are the same sequence of commits, each id once, in order;</li>
 *   <li>writes resume within {@value #RESUME_BOUND_S} s of the fault: a request sent after the last
 *       one that failed is answered 200 (measured on the servers the fault did not stop);</li>
 *   <li>no request to a running server waits more than {@value #LONGEST_BOUND_S} s;</li>
 *   <li>at most one PostgreSQL server could acknowledge a commit at any sample, every 0.5 s (see
 *       {@link #CAN_ACKNOWLEDGE}).</li>
 * </ul>
 * The table of figures is printed at the end (docs/scaling.md's failures table comes from it).
 */
@Tag("faults")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)  // a fault, its healing and the checks: about a minute each
class ClusterTest {
    /** Writes resume within this many seconds of a fault: Patroni's 10 s lease, HAProxy's checks, kiln's reconnects. */
    static final long RESUME_BOUND_S = 30;
    /** No request to a server that runs waits longer, s. */
    static final long LONGEST_BOUND_S = 35;

    private static Path dir;
    private static int nginx;
    private static int[] kiln;
    private static int[] postgres;
    private static int[] patroni;
    private static int[] etcd;
    private static int haproxy;
    /** The rows of every /updates answered 200 by the first tests, as JSON arrays: each must be in the feed. */
    private static final List<String> acknowledged = Collections.synchronizedList(new ArrayList<>());
    /** The fault suite's table, a row per fault. */
    private static final List<String> table = Collections.synchronizedList(new ArrayList<>());

    @BeforeAll
    static void start() throws Exception {
        assertTrue(Files.isExecutable(Path.of("/usr/sbin/nginx")), "nginx is not installed: apt-get install nginx-light");
        // under /tmp, open to all: as root, PostgreSQL runs as the postgres user, who must reach its directories
        dir = Files.createTempDirectory("kiln-cluster-test-", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        nginx = freePort();
        kiln = new int[] {freePort(), freePort()};
        postgres = new int[] {freePort(), freePort()};
        patroni = new int[] {freePort(), freePort()};
        etcd = new int[] {freePort(), freePort()};
        haproxy = freePort();
        cluster("start");
    }

    @AfterAll
    static void stop() throws Exception {
        if (dir == null) return;
        if (!table.isEmpty()) {
            System.out.println("ClusterTest: the fault suite\n| fault | acknowledged | lost | duplicated | failed (503) | longest request | writes resumed after | primaries able to acknowledge at once |\n"
                + "| --- | --- | --- | --- | --- | --- | --- | --- |\n" + String.join("\n", table));
        }
        Command stopped = cluster0("stop");
        System.out.println(stopped.output);
        for (String log : List.of("kiln-a.log", "kiln-b.log", "patroni/pg1.log", "patroni/pg2.log")) {
            Path f = dir.resolve(log);
            if (Files.exists(f)) System.out.println("--- " + log + " (last lines)\n" + tail(f, 15));
        }
        Command.run(60, List.of("rm", "-rf", dir.toString()));
    }

    private static Command cluster0(String command) throws IOException, InterruptedException {
        Path jar = Dirs.repo().resolve("http-kilim/target/kiln-kilim.jar");
        return Command.run(300, List.of("env", "PORT=" + nginx, "KILN_PORTS=" + kiln[0] + " " + kiln[1],
            "PG_PORTS=" + postgres[0] + " " + postgres[1], "PATRONI_PORTS=" + patroni[0] + " " + patroni[1],
            "ETCD_PORTS=" + etcd[0] + " " + etcd[1], "HAPROXY_PORT=" + haproxy,
            "JAR=" + jar, "JAVA=" + ProcessHandle.current().info().command().orElse("java"),
            "JAVA_FLAGS=@" + Dirs.repo().resolve("deploy/jvm.options"),
            Dirs.repo().resolve("scripts/cluster.sh").toString(), command, dir.toString()));
    }

    private static void cluster(String command) throws IOException, InterruptedException {
        Command c = cluster0(command);
        assertEquals(0, c.exitCode, () -> "scripts/cluster.sh " + command + ":\n" + c.output);
    }

    @Test
    @Order(1)
    void theDemoAnswersThroughNginxAndACommitThroughOneServerReachesASubscriberOfTheOther() throws Exception {
        for (String path : List.of("/", "/db", "/queries?queries=3", "/fortunes", "/worlds/42", "/healthz", "/live", "/cached-queries?count=2")) {
            HttpResponse<String> r = get(nginx, path);
            assertEquals(200, r.statusCode(), () -> path + " through nginx: " + r.body());
        }
        try (RawConnection events = subscribe(kiln[1], "")) {
            String rows = update(kiln[0]);
            JsonNode event = ServerSentEventsTest.events(events, 1).get(0).data();
            assertEquals(Contract.JSON.readTree(rows), event.get("worlds"), "the commit made through server a, delivered by server b");
        }
    }

    /**
     * kill -9 of one server while four clients send /db and /updates through nginx: nginx sends what
     * met the dead server to the other (every request here is a GET), so every request is answered
     * 200, and every /updates answered is in the feed.
     */
    @Test
    @Order(2)
    void killingOneServerUnderLoadLosesNoRequestAndNoAcknowledgedWrite() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        int[] answered = new int[1];
        ExecutorService clients = Executors.newFixedThreadPool(4);
        List<Future<?>> running = new ArrayList<>();
        for (int c = 0; c < 4; c++) {
            boolean writes = c % 2 == 0;
            running.add(clients.submit(() -> {
                while (!stop.get()) {
                    try {
                        HttpResponse<String> r = get(nginx, writes ? "/updates?queries=1" : "/db");
                        if (r.statusCode() != 200) failures.add(r.statusCode() + " " + r.body());
                        else if (writes) acknowledged.add(r.body());
                        synchronized (answered) {
                            answered[0]++;
                        }
                    } catch (IOException e) {
                        failures.add(e.toString());
                    }
                }
                return null;
            }));
        }
        Thread.sleep(1500);
        ProcessHandle.of(pid("kiln-a.pid")).ifPresent(ProcessHandle::destroyForcibly);  // SIGKILL: no graceful end
        Thread.sleep(2500);
        stop.set(true);
        for (Future<?> f : running) f.get();
        clients.shutdown();
        assertTrue(failures.isEmpty(), () -> failures.size() + " of " + answered[0] + " requests failed: " + failures.subList(0, Math.min(5, failures.size())));
        assertTrue(answered[0] > 50, "the load ran: " + answered[0]);
        System.out.println("ClusterTest: " + answered[0] + " requests through nginx answered 200 while server a was killed;"
            + " checking " + acknowledged.size() + " acknowledged writes in the feed");
        Set<JsonNode> missing = new HashSet<>();
        synchronized (acknowledged) {
            for (String rows : acknowledged) missing.add(Contract.JSON.readTree(rows));
        }
        int want = missing.size();
        try (RawConnection events = subscribe(kiln[1], "Last-Event-ID: 0\r\n")) {
            while (!missing.isEmpty()) {
                for (ServerSentEventsTest.Event e : ServerSentEventsTest.events(events, 1)) missing.remove(e.data().get("worlds"));
            }
        } catch (AssertionError | java.io.UncheckedIOException e) {
            throw new AssertionError(missing.size() + " of " + want + " acknowledged writes are not in the feed, e.g. " + missing.iterator().next(), e);
        }
        cluster("start");  // starts server a again, the rest runs
        assertEquals(200, get(kiln[0], "/healthz").statusCode());
    }

    // ---- the fault suite: one fault at a time, each healed before the next ----

    @Test
    @Order(10)
    void primaryKilled() throws Exception {
        fault("the primary killed (kill -9 of Patroni and PostgreSQL)", Set.of(), () -> signal("KILL", node(primary())), null, null);
    }

    @Test
    @Order(11)
    void primaryHung() throws Exception {
        int[] hung = new int[1];
        fault("the primary hung for 20 s (SIGSTOP of Patroni and PostgreSQL)", Set.of(),
            () -> {
                hung[0] = primary();
                signal("STOP", node(hung[0]));
            }, Duration.ofSeconds(20), () -> signal("CONT", node(hung[0])));
    }

    @Test
    @Order(12)
    void standbyKilled() throws Exception {
        fault("the standby killed (kill -9 of Patroni and PostgreSQL)", Set.of(), () -> signal("KILL", node(1 - primary())), null, null);
    }

    @Test
    @Order(13)
    void standbyHung() throws Exception {
        int[] hung = new int[1];
        fault("the standby hung for 15 s (SIGSTOP)", Set.of(),
            () -> {
                hung[0] = 1 - primary();
                signal("STOP", node(hung[0]));
            }, Duration.ofSeconds(15), () -> signal("CONT", node(hung[0])));
    }

    /** Server a is stopped while its writer holds the cluster's write lock: server b's writes go on once PostgreSQL ends a's session. */
    @Test
    @Order(14)
    void kilnServerHungHoldingTheWriteLock() throws Exception {
        long a = pid("kiln-a.pid");
        fault("kiln server a hung for 15 s holding the write lock (SIGSTOP)", Set.of(0),
            () -> stopHoldingTheWriteLock(a), Duration.ofSeconds(15), () -> signal("CONT", List.of(a)));
    }

    @Test
    @Order(15)
    void kilnServerKilled() throws Exception {
        fault("kiln server a killed (kill -9)", Set.of(0), () -> signal("KILL", List.of(pid("kiln-a.pid"))), null, null);
    }

    @Test
    @Order(16)
    void etcdKilled() throws Exception {
        fault("etcd killed (kill -9)", Set.of(), () -> signal("KILL", List.of(pid("etcd.pid"))), null, null);
    }

    @Test
    @Order(17)
    void etcdHung() throws Exception {
        long etcd = pid("etcd.pid");
        fault("etcd hung for 15 s (SIGSTOP)", Set.of(), () -> signal("STOP", List.of(etcd)), Duration.ofSeconds(15),
            () -> signal("CONT", List.of(etcd)));
    }

    @Test
    @Order(18)
    void kilnConnectionsTerminated() throws Exception {
        fault("every kiln session ended 3 times, 1 s apart (pg_terminate_backend)", Set.of(), () -> {
            for (int i = 0; i < 3; i++) {
                sql(postgres[primary()], "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE 'kiln-%'");
                Thread.sleep(1000);
            }
        }, null, null);
    }

    interface Step {
        void run() throws Exception;
    }

    /**
     * Runs one fault under recorded load: a steady cluster, 3 s of load, {@code inject}; for a pause,
     * {@code heal} after {@code hold}; load until writes resumed (and the pause ended) plus 3 s; then
     * {@code scripts/cluster.sh start} restarts whatever was killed, and the feeds are checked.
     *
     * @param skipped the kiln servers the fault stops: their requests count for lost and duplicated
     *                writes, not for the time to resume nor the longest request
     */
    private static void fault(String name, Set<Integer> skipped, Step inject, Duration hold, Step heal) throws Exception {
        awaitSteady();
        long from = marker(kiln[0]);
        Recorder load = new Recorder();
        Primaries primaries = new Primaries();
        long resumed;
        long t0;
        try {
            Thread.sleep(3000);
            t0 = System.nanoTime();
            inject.run();
            if (hold != null) {
                Thread.sleep(hold.toMillis());
                heal.run();
            }
            // load on until writes have gone on for 5 s with no failure and no request waiting 5 s
            long deadline = t0 + Duration.ofSeconds(RESUME_BOUND_S + 30).toNanos();
            long settled = Duration.ofSeconds(5).toNanos();
            while (System.nanoTime() < deadline) {
                long r = load.resumedAfter(t0, skipped);
                if (r >= 0 && System.nanoTime() - r > settled && load.longestWaiting(skipped) < settled) break;
                Thread.sleep(100);
            }
        } finally {
            load.close();
            primaries.close();
        }
        resumed = load.resumedAfter(t0, skipped);
        resumed = resumed < 0 ? -1 : (resumed - t0) / 1_000_000;
        cluster("start");  // restarts what was killed; the members rejoin on their own
        awaitSteady();
        long to = marker(kiln[0]);

        List<ServerSentEventsTest.Event> feedA = feed(kiln[0], from, to);
        List<ServerSentEventsTest.Event> feedB = feed(kiln[1], from, to);
        Map<JsonNode, Integer> logged = new HashMap<>();
        for (ServerSentEventsTest.Event e : feedA) logged.merge(e.data().get("worlds"), 1, Integer::sum);
        int acked = 0;
        int failed = 0;
        long longest = 0;
        List<String> lost = new ArrayList<>();
        List<String> duplicated = new ArrayList<>();
        for (Recorder.Outcome o : load.outcomes()) {
            if (!skipped.contains(o.server)) longest = Math.max(longest, (o.end - o.start) / 1_000_000);
            if (o.status != 200) {
                failed++;
                continue;
            }
            acked++;
            int times = logged.getOrDefault(Contract.JSON.readTree(o.body), 0);
            if (times == 0) lost.add(o.body);
            if (times > 1) duplicated.add(o.body);
        }
        String row = "| " + name + " | " + acked + " | " + lost.size() + " | " + duplicated.size() + " | " + failed + " | "
            + String.format("%.1f s", longest / 1000.0) + " | " + (resumed < 0 ? "never" : String.format("%.1f s", resumed / 1000.0))
            + " | " + primaries.most() + " |";
        table.add(row);
        System.out.println("ClusterTest: " + row + "\n  failures: " + load.failureKinds());

        assertEquals(ids(feedA), ids(feedB), "both servers' feeds hold the same commits");
        List<Long> ids = ids(feedA);
        assertEquals(ids.size(), new HashSet<>(ids).size(), "each commit once in the feed");
        assertEquals(ids.stream().sorted().toList(), ids, "the feed in commit order");
        assertTrue(acked > 50, "the load ran: " + row);
        assertTrue(lost.isEmpty(), () -> lost.size() + " acknowledged writes are not in the feed, e.g. " + lost.get(0) + "\n" + row);
        assertTrue(duplicated.isEmpty(), () -> duplicated.size() + " acknowledged writes are in the feed twice, e.g. " + duplicated.get(0));
        assertTrue(resumed >= 0 && resumed <= RESUME_BOUND_S * 1000, "writes resumed within " + RESUME_BOUND_S + " s: " + row);
        assertTrue(longest <= LONGEST_BOUND_S * 1000, "no request waited over " + LONGEST_BOUND_S + " s: " + row);
        assertTrue(primaries.most() <= 1, "at most one PostgreSQL server could acknowledge a commit at once: " + row);
    }

    /** @return the id in {@code port}'s feed of the commit of an /updates made through it now: the feed's newest */
    private static long marker(int port) throws Exception {
        try (RawConnection events = subscribe(port, "")) {
            JsonNode rows = Contract.JSON.readTree(update(port));
            while (true) {
                for (ServerSentEventsTest.Event e : ServerSentEventsTest.events(events, 1)) {
                    if (rows.equals(e.data().get("worlds"))) return e.id();
                }
            }
        }
    }

    /** @return the events of {@code port}'s feed after {@code after}, through {@code through} */
    private static List<ServerSentEventsTest.Event> feed(int port, long after, long through) throws Exception {
        List<ServerSentEventsTest.Event> all = new ArrayList<>();
        try (RawConnection events = subscribe(port, "Last-Event-ID: " + after + "\r\n")) {
            while (all.isEmpty() || all.get(all.size() - 1).id() < through) {
                for (ServerSentEventsTest.Event e : ServerSentEventsTest.events(events, 1)) {
                    assertEquals("update", e.type(), () -> "the feed of the server on " + port + " after " + after + ": " + e);
                    all.add(e);
                }
            }
        }
        return all;
    }

    private static List<Long> ids(List<ServerSentEventsTest.Event> events) {
        return events.stream().map(ServerSentEventsTest.Event::id).toList();
    }

    /**
     * Clients that record every /updates they send: two per kiln server, each sending one after
     * another (20 ms apart after a 200, 200 ms after a failure), never retrying.
     */
    private static final class Recorder implements AutoCloseable {
        record Outcome(int server, long start, long end, int status, String body) {
        }

        private final List<Outcome> outcomes = Collections.synchronizedList(new ArrayList<>());
        /** When each client's request now in flight began, by client (0 while none). */
        private final long[] sending = new long[4];
        private final AtomicBoolean stop = new AtomicBoolean();
        private final ExecutorService clients = Executors.newFixedThreadPool(4);
        private final List<Future<?>> running = new ArrayList<>();

        Recorder() {
            for (int c = 0; c < 4; c++) {
                int server = c % 2;
                int client = c;
                running.add(clients.submit(() -> {
                    while (!stop.get()) {
                        long start = System.nanoTime();
                        synchronized (sending) {
                            sending[client] = start;
                        }
                        int status;
                        String body;
                        try {
                            HttpResponse<String> r = Contract.CLIENT.send(HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + kiln[server] + "/updates?queries=2")).timeout(Duration.ofSeconds(60)).build(),
                                HttpResponse.BodyHandlers.ofString());
                            status = r.statusCode();
                            body = r.body();
                        } catch (IOException e) {
                            status = 0;
                            body = e.toString();
                        }
                        outcomes.add(new Outcome(server, start, System.nanoTime(), status, body));
                        synchronized (sending) {
                            sending[client] = 0;
                        }
                        Thread.sleep(status == 200 ? 20 : 200);
                    }
                    return null;
                }));
            }
        }

        /**
         * @return when writes resumed after a fault at {@code t0}, on the servers not in {@code skipped}:
         *         when the first request answered 200 began among those sent after the last failed one
         *         began (after {@code t0} when none failed); -1 when none has been answered yet
         */
        long resumedAfter(long t0, Set<Integer> skipped) {
            List<Outcome> seen = outcomes().stream().filter(o -> !skipped.contains(o.server)).toList();
            long lastFailure = seen.stream().filter(o -> o.status != 200).mapToLong(Outcome::start).filter(t -> t - t0 > 0).max().orElse(t0);
            return seen.stream().filter(o -> o.status == 200 && o.start - lastFailure > 0).mapToLong(Outcome::start).min().orElse(-1);
        }

        /** @return how long the longest request in flight to a server not in {@code skipped} has waited, ns */
        long longestWaiting(Set<Integer> skipped) {
            long now = System.nanoTime();
            long longest = 0;
            synchronized (sending) {
                for (int c = 0; c < sending.length; c++) {
                    if (sending[c] != 0 && !skipped.contains(c % 2)) longest = Math.max(longest, now - sending[c]);
                }
            }
            return longest;
        }

        List<Outcome> outcomes() {
            synchronized (outcomes) {
                return List.copyOf(outcomes);
            }
        }

        /** @return how many failed, by status and the start of the message */
        Map<String, Integer> failureKinds() {
            Map<String, Integer> kinds = new HashMap<>();
            for (Outcome o : outcomes()) {
                if (o.status != 200) kinds.merge(o.status + " " + o.body.substring(0, Math.min(90, o.body.length())), 1, Integer::sum);
            }
            return kinds;
        }

        @Override
        public void close() throws Exception {
            stop.set(true);
            for (Future<?> f : running) f.get();
            clients.shutdown();
        }
    }

    /**
     * Whether a PostgreSQL server could acknowledge a commit now: a primary (not in recovery) whose
     * commits need no synchronous standby, or whose synchronous standby streams from it. An old
     * primary woken after a failover claims to be a primary until Patroni demotes it, but its commits
     * wait for a standby that left it: it can acknowledge nothing.
     */
    private static final String CAN_ACKNOWLEDGE = "SELECT NOT pg_is_in_recovery() AND (current_setting('synchronous_standby_names') = ''"
        + " OR EXISTS (SELECT 1 FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')))";

    /** Samples every 0.5 s how many PostgreSQL servers could acknowledge a commit ({@link #CAN_ACKNOWLEDGE}); a hung one says nothing. */
    private static final class Primaries implements AutoCloseable {
        private final AtomicInteger most = new AtomicInteger();
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread sampler = new Thread(this::sample, "primaries");

        Primaries() {
            sampler.setDaemon(true);
            sampler.start();
        }

        private void sample() {
            while (!stop.get()) {
                int now = 0;
                for (int port : postgres) {
                    try {
                        if ("t".equals(sql(port, CAN_ACKNOWLEDGE))) now++;
                    } catch (Exception e) {
                        // down or hung: not a primary anyone can use
                    }
                }
                most.accumulateAndGet(now, Math::max);
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        int most() {
            return most.get();
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            sampler.join(10_000);
        }
    }

    /** @return the one value {@code query} selects on the PostgreSQL server on {@code port} ("t"/"f" for booleans) */
    private static String sql(int port, String query) throws SQLException {
        String url = "jdbc:postgresql://127.0.0.1:" + port + "/kiln?user=kiln&connectTimeout=1&socketTimeout=2&loginTimeout=2&ApplicationName=cluster-test";
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement(); ResultSet r = s.executeQuery(query)) {
            if (!r.next()) return null;
            Object v = r.getObject(1);
            return v instanceof Boolean b ? (b ? "t" : "f") : String.valueOf(v);
        }
    }

    /** Waits (up to 3 minutes) for one primary, a synchronous standby, and both kiln servers healthy. */
    private static void awaitSteady() throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
        String state = "";
        while (System.nanoTime() < deadline) {
            boolean p0 = patroniSays(0, "/primary");
            boolean p1 = patroniSays(1, "/primary");
            boolean steady = p0 != p1 && patroniSays(p0 ? 1 : 0, "/sync") && healthy(kiln[0]) && healthy(kiln[1]);
            if (steady) return;
            state = "pg1 primary " + p0 + ", pg2 primary " + p1;
            Thread.sleep(500);
        }
        throw new AssertionError("the cluster did not become steady (a primary, a synchronous standby, both servers healthy) in 3 minutes: " + state);
    }

    private static boolean healthy(int port) {
        try {
            return get(port, "/healthz").statusCode() == 200;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private static boolean patroniSays(int member, String path) {
        try {
            return Contract.CLIENT.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + patroni[member] + path)).timeout(Duration.ofSeconds(2)).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** @return the member (0 or 1) that holds Patroni's lease */
    private static int primary() {
        if (patroniSays(0, "/primary")) return 0;
        if (patroniSays(1, "/primary")) return 1;
        throw new AssertionError("no member holds the lease");
    }

    /** @return a database node's processes: its Patroni, its postmaster and the postmaster's children */
    private static List<Long> node(int member) throws IOException {
        String m = "pg" + (member + 1);
        List<Long> pids = new ArrayList<>();
        pids.add(pid("patroni/" + m + ".pid"));
        long postmaster = Long.parseLong(Files.readAllLines(dir.resolve(m + "/postmaster.pid")).get(0).trim());
        pids.add(postmaster);
        ProcessHandle.of(postmaster).ifPresent(p -> p.children().forEach(c -> pids.add(c.pid())));
        return pids;
    }

    private static void signal(String signal, List<Long> pids) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
        pids.forEach(p -> command.add(Long.toString(p)));
        Command.run(10, command);
    }

    /** SIGSTOPs {@code pid} (kiln server a) at a moment its session holds the write lock; tries for up to 30 s. */
    private static void stopHoldingTheWriteLock(long pid) throws Exception {
        String holder = "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted";
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            if ("kiln-a".equals(sql(postgres[primary()], holder))) {
                signal("STOP", List.of(pid));
                if ("kiln-a".equals(sql(postgres[primary()], holder))) return;  // stopped while holding it
                signal("CONT", List.of(pid));
            }
        }
        throw new AssertionError("server a never held the write lock in 30 s");
    }

    private static long pid(String file) throws IOException {
        return Long.parseLong(Files.readString(dir.resolve(file)).trim());
    }

    /** @return the rows of one /updates through {@code port}, answered 200, recorded as acknowledged */
    private static String update(int port) throws Exception {
        HttpResponse<String> r = get(port, "/updates?queries=2");
        assertEquals(200, r.statusCode(), r::body);
        acknowledged.add(r.body());
        return r.body();
    }

    /** A subscriber of /updates/events on the server on {@code port}, its head read (see {@link ServerSentEventsTest}). */
    private static RawConnection subscribe(int port, String extraHeaders) {
        return ServerSentEventsTest.subscribe(RawConnection.open("kiln on " + port, port, RawConnection.READ_TIMEOUT_MS), extraHeaders);
    }

    private static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return Contract.CLIENT.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(20)).build(),
            HttpResponse.BodyHandlers.ofString());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static String tail(Path f, int n) throws IOException {
        List<String> all = Files.readAllLines(f);
        return String.join("\n", all.subList(Math.max(0, all.size() - n), all.size()));
    }
}

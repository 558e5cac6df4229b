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
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * {@code make cluster} as shipped (scripts/cluster.sh, deploy/nginx/kiln-cluster.conf): a PostgreSQL
 * primary and hot standby, two Kilim servers over it, nginx in front, on free loopback ports. A commit
 * through one server reaches a subscriber of the other; then the faults, in order: one server killed
 * under load through nginx, the primary stopped and started, the primary crashed and the standby
 * promoted. Every acknowledged write is checked against the change feed, which logs each commit in
 * its own transaction: none may be missing.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterTest {
    private static Path dir;
    private static int nginx;
    private static int[] kiln;
    private static int[] postgres;
    /** The rows of every /updates answered 200, as JSON arrays: each must be in the feed. */
    private static final List<String> acknowledged = Collections.synchronizedList(new ArrayList<>());

    @BeforeAll
    static void start() throws Exception {
        assertTrue(Files.isExecutable(Path.of("/usr/sbin/nginx")), "nginx is not installed: apt-get install nginx-light");
        // under /tmp, open to all: as root, PostgreSQL runs as the postgres user, who must reach its directories
        dir = Files.createTempDirectory("kiln-cluster-test-", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        nginx = freePort();
        kiln = new int[] {freePort(), freePort()};
        postgres = new int[] {freePort(), freePort()};
        cluster("start");
    }

    @AfterAll
    static void stop() throws Exception {
        if (dir == null) return;
        Command stopped = cluster0("stop");
        System.out.println(stopped.output);
        for (String log : List.of("kiln-a.log", "kiln-b.log")) {
            Path f = dir.resolve(log);
            if (Files.exists(f)) System.out.println("--- " + log + " (last lines)\n" + tail(f, 15));
        }
        Command.run(60, List.of("rm", "-rf", dir.toString()));
    }

    private static Command cluster0(String command) throws IOException, InterruptedException {
        Path jar = Dirs.repo().resolve("http-kilim/target/kiln-kilim.jar");
        return Command.run(240, List.of("env", "PORT=" + nginx, "KILN_PORTS=" + kiln[0] + " " + kiln[1],
            "PG_PORTS=" + postgres[0] + " " + postgres[1], "JAR=" + jar, "JAVA=" + ProcessHandle.current().info().command().orElse("java"),
            "JAVA_FLAGS=@" + Dirs.repo().resolve("deploy/jvm.options"),
            Dirs.repo().resolve("scripts/cluster.sh").toString(), command, dir.toString()));
    }

    private static void cluster(String command) throws IOException, InterruptedException {
        Command c = cluster0(command);
        assertEquals(0, c.exitCode, () -> "scripts/cluster.sh " + command + ":\n" + c.output);
    }

    private static void postgres(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Dirs.repo().resolve("scripts/postgres.sh").toString()));
        command.addAll(List.of(args));
        Command c = Command.run(120, command);
        assertEquals(0, c.exitCode, () -> command + ":\n" + c.output);
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
        long pid = Long.parseLong(Files.readString(dir.resolve("kiln-a.pid")).trim());
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);  // SIGKILL: no graceful end
        Thread.sleep(2500);
        stop.set(true);
        for (Future<?> f : running) f.get();
        clients.shutdown();
        assertTrue(failures.isEmpty(), () -> failures.size() + " of " + answered[0] + " requests failed: " + failures.subList(0, Math.min(5, failures.size())));
        assertTrue(answered[0] > 50, "the load ran: " + answered[0]);
        System.out.println("ClusterTest: " + answered[0] + " requests through nginx answered 200 while server a was killed;"
            + " checking " + acknowledged.size() + " acknowledged writes in the feed");
        assertEveryAcknowledgedWriteIsInTheFeed(kiln[1]);
        cluster("start");  // starts server a again, the rest runs
        assertEquals(200, get(kiln[0], "/healthz").statusCode());
    }

    /** The primary stopped: both servers answer 503 at once (no hang), /healthz too, and serve again on their own once it is back. */
    @Test
    @Order(3)
    void aStoppedPrimaryGives503AndTheServersComeBackOnTheirOwn() throws Exception {
        postgres("stop", dir.resolve("postgres-primary").toString(), "fast");
        for (int port : kiln) {
            for (String path : List.of("/db", "/updates?queries=1", "/healthz")) {
                long began = System.nanoTime();
                HttpResponse<String> r = get(port, path);
                long ms = (System.nanoTime() - began) / 1_000_000;
                assertEquals(503, r.statusCode(), () -> path + " on " + port + " with the primary stopped: " + r.body());
                assertEquals("1", r.headers().firstValue("Retry-After").orElse(null));
                assertTrue(ms < 5000, path + " took " + ms + " ms");
            }
        }
        postgres("start", dir.resolve("postgres-primary").toString());
        for (int port : kiln) {
            awaitHealthy(port);
            assertEquals(200, get(port, "/db").statusCode());
            String rows = update(port);
            assertTrue(rows.startsWith("["), rows);
        }
        assertEveryAcknowledgedWriteIsInTheFeed(kiln[0]);
    }

    /**
     * The primary crashes (immediate stop) right after acknowledged writes; the standby is promoted
     * (pg_ctl promote). With synchronous_commit = remote_apply every acknowledged write was on the
     * standby before it was acknowledged: the servers reconnect to it on their own (their URL names
     * both, targetServerType=primary) and every one is there.
     */
    @Test
    @Order(4)
    void aPromotedStandbyHasEveryAcknowledgedWrite() throws Exception {
        assertEquals("remote_apply|sync", psql(postgres[0],
            "SELECT current_setting('synchronous_commit') || '|' || sync_state FROM pg_stat_replication"),
            "the primary waits for the standby to apply each commit before it is acknowledged");
        for (int i = 0; i < 20; i++) update(kiln[i % 2]);
        postgres("stop", dir.resolve("postgres-primary").toString(), "immediate");
        postgres("promote", dir.resolve("postgres-standby").toString());
        for (int port : kiln) awaitHealthy(port);
        assertEveryAcknowledgedWriteIsInTheFeed(kiln[0]);
        assertEveryAcknowledgedWriteIsInTheFeed(kiln[1]);
        update(kiln[1]);  // and it takes writes
    }

    private static void awaitHealthy(int port) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        HttpResponse<String> r = get(port, "/healthz");
        while (r.statusCode() != 200 && System.nanoTime() < deadline) {
            Thread.sleep(200);
            r = get(port, "/healthz");
        }
        HttpResponse<String> last = r;
        assertEquals(200, last.statusCode(), () -> "server on " + port + " did not come back: " + last.body());
    }

    /** @return the rows of one /updates through {@code port}, answered 200, recorded as acknowledged */
    private static String update(int port) throws Exception {
        HttpResponse<String> r = get(port, "/updates?queries=2");
        assertEquals(200, r.statusCode(), r::body);
        acknowledged.add(r.body());
        return r.body();
    }

    /** Every acknowledged /updates is a set of the World table's feed, read from its start on {@code port}. */
    private static void assertEveryAcknowledgedWriteIsInTheFeed(int port) throws Exception {
        Set<JsonNode> missing = new HashSet<>();
        synchronized (acknowledged) {
            for (String rows : acknowledged) missing.add(Contract.JSON.readTree(rows));
        }
        int want = missing.size();
        try (RawConnection events = subscribe(port, "Last-Event-ID: 0\r\n")) {
            while (!missing.isEmpty()) {
                for (ServerSentEventsTest.Event e : ServerSentEventsTest.events(events, 1)) missing.remove(e.data().get("worlds"));
            }
        } catch (AssertionError | java.io.UncheckedIOException e) {
            throw new AssertionError(missing.size() + " of " + want + " acknowledged writes are not in the feed of the server on "
                + port + ", e.g. " + missing.iterator().next(), e);
        }
    }

    /** @return the one value {@code sql} selects on the PostgreSQL server on {@code port} */
    private static String psql(int port, String sql) throws IOException, InterruptedException {
        String bin = Command.run(30, List.of(Dirs.repo().resolve("scripts/postgres.sh").toString(), "bindir")).output.trim();
        Command c = Command.run(30, List.of(bin + "/psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", Integer.toString(port), "-U", "kiln",
            "-d", "kiln", "-c", sql));
        assertEquals(0, c.exitCode, c.output);
        return c.output.trim();
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

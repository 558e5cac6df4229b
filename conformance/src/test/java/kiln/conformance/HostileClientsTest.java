package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Hostile clients at counts that end a server whose memory or time is not bounded (issue 36), for
 * every front end, each started with {@code make demo}'s JVM flags ({@code deploy/jvm.options}: a
 * 256 MB heap, exit on OutOfMemoryError): thousands of partial bodies, heads whose body never
 * comes, chunked bodies that stop, bodies trickled a byte at a time, junk sent on event streams,
 * streams that never read, and a burst of streams from one address. For each attack:
 * <ul>
 *   <li>the server is alive afterwards;</li>
 *   <li>the request memory it holds stays within its limit ({@code kiln_request_memory_bytes}
 *       against {@code --max-request-memory}, sampled from {@code /metrics}; the heap in use is
 *       recorded beside it, and with {@code -XX:+ExitOnOutOfMemoryError} a server that ran out
 *       of heap is not alive);</li>
 *   <li>{@code /plaintext}, asked by another client every {@value Probe#EVERY_MS} ms during the
 *       attack, is answered within {@value #P99_MS} ms at the 99th percentile;</li>
 *   <li>the attack's connections are closed within their deadline (the header timeout, the
 *       minimum data rate's grace, a refusal), plus {@value #SLACK_MS} ms for the reaper's tick and
 *       a busy machine.</li>
 * </ul>
 * The attackers come from addresses of 127.0.0.0/8 other than 127.0.0.1 ({@link Swarm}), the probe
 * from 127.0.0.3: per-client limits apply to them all ({@code --proxies} names none of them).
 * Each line of figures is also appended to {@code target/hostile-clients.tsv}, the table of the
 * closing note. {@code -Dkiln.hostile.before=true} runs the attacks against servers without
 * these limits (an older build: {@code -Dkiln.repo=...}), passing none of the new options.
 */
@Tag("hostile")
class HostileClientsTest {
    /** Shorter than the defaults (10 s, 5 s), so that each attack ends within seconds. */
    static final int HEADER_TIMEOUT_MS = 3_000;
    static final int GRACE_MS = 2_000;
    static final int P99_MS = 1_000;
    static final int SLACK_MS = 3_000;
    static final int MAX_STREAMS = 2_000;
    static final int CLIENT_STREAMS = 32;
    /**
     * The suite's minimum response rate, bytes/s: above the default (240), so that a stalled write of
     * a 16 KB event is cut within seconds (at 240 B/s it would be allowed 70 s), while the kernel's
     * socket buffers (up to 4 MB a connection here) take a few seconds of events to fill.
     */
    static final int RESPONSE_RATE = 10_000;
    static final boolean BEFORE = Boolean.getBoolean("kiln.hostile.before");

    @RegisterExtension
    static final Servers SERVERS = new Servers("HostileClientsTest", serverArgs()).withDemoJvmFlags().restartingTheDead();

    static String[] serverArgs() {
        List<String> args = new ArrayList<>(List.of("--header-timeout", Integer.toString(HEADER_TIMEOUT_MS),
            "--max-streams", Integer.toString(MAX_STREAMS)));
        if (!BEFORE) {
            args.addAll(List.of("--min-rate-grace", Integer.toString(GRACE_MS), "--max-client-streams", Integer.toString(CLIENT_STREAMS),
                "--min-response-rate", Integer.toString(RESPONSE_RATE)));
        }
        return args.toArray(new String[0]);
    }

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    private static final String HOST = "Host: 127.0.0.1\r\n";

    /** A head of {@code POST /json} declaring {@code length} bytes of content. */
    private static String postHead(int length) {
        return "POST /json HTTP/1.1\r\n" + HOST + "Content-Type: application/json\r\nContent-Length: " + length + "\r\n\r\n";
    }

    /**
     * 2,500 connections, 25 per address, each sending a head declaring 64 KiB and 64 KiB less one
     * byte of it, then nothing: 160 MB in flight, more than the heap holds.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void partialBodies(FrontEnd fe) throws Exception {
        Swarm.Script s = Swarm.Script.sending(postHead(65_536) + "a".repeat(65_535));
        s.perAddress = 25;
        attack(fe, "partial bodies", 2_500, s, GRACE_MS);
    }

    /** 4,500 connections, 45 per address, each sending only a head that declares 64 KiB of content. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void headsOnly(FrontEnd fe) throws Exception {
        Swarm.Script s = Swarm.Script.sending(postHead(65_536));
        s.perAddress = 45;
        attack(fe, "heads only", 4_500, s, GRACE_MS);
    }

    /** 2,500 chunked requests, 25 per address, that send 60 KiB of chunks and never the last chunk. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void chunkedBodies(FrontEnd fe) throws Exception {
        StringBuilder body = new StringBuilder("POST /json HTTP/1.1\r\n" + HOST + "Transfer-Encoding: chunked\r\n\r\n");
        for (int i = 0; i < 15; i++) body.append("1000\r\n").append("b".repeat(4096)).append("\r\n");
        Swarm.Script s = Swarm.Script.sending(body.toString());
        s.perAddress = 25;
        attack(fe, "chunked bodies", 2_500, s, GRACE_MS);
    }

    /**
     * 400 connections, 20 per address, each sending a head declaring 1,000 bytes, then one byte
     * every 500 ms: 2 bytes per second, below the minimum data rate (240 bytes per second).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void trickledBodies(FrontEnd fe) throws Exception {
        Swarm.Script s = Swarm.Script.sending(postHead(1_000));
        s.trickle = "{".repeat(999).getBytes(StandardCharsets.US_ASCII);
        s.trickleMs = 500;
        s.perAddress = 20;
        attack(fe, "trickled bodies", 400, s, GRACE_MS);
    }

    /**
     * 1,800 event streams, 30 per address, whose clients then send junk, 8 KiB every 50 ms up to
     * 160 KiB each: a stream's client has nothing to send.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void junkOnStreams(FrontEnd fe) throws Exception {
        Swarm.Script s = Swarm.Script.sending("GET /updates/events HTTP/1.1\r\n" + HOST + "\r\n");
        s.repeat = "x".repeat(8192).getBytes(StandardCharsets.US_ASCII);
        s.repeatMs = 50;
        s.repeatBytes = 160 * 1024;
        s.perAddress = 30;
        attack(fe, "junk on streams", 1_800, s, 0);
    }

    /**
     * 20 event streams, 10 per address, whose clients never read (a 4 KiB receive buffer), while
     * updates of 500 rows (an event of about 16 KB) are committed as fast as one client can for 8 s:
     * once the socket buffers are full, each write to them waits, and must be cut at the minimum
     * response rate's deadline (the grace period plus an event's bytes at {@value #RESPONSE_RATE}
     * B/s, under 4 s here), not held for the idle timeout (60 s).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void streamsThatNeverRead(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        RobustnessTest.assertServesPromptly(server);
        Swarm.Script s = Swarm.Script.sending("GET /updates/events HTTP/1.1\r\n" + HOST + "\r\n");
        s.reads = false;
        s.perAddress = 10;
        long started = System.nanoTime();
        try (Probe probe = new Probe(server.port); Swarm swarm = new Swarm(server.port)) {
            List<Swarm.Conn> conns = swarm.start(20, s);
            Swarm.awaitConnected(conns, 10_000);
            Thread.sleep(500);
            commitUpdates(server, 8_000);
            Thread.sleep(GRACE_MS + 2_000 + SLACK_MS);  // the last writes' deadlines: the grace period plus an event at the rate
            swarm.drainUnread(conns);
            probe.close();
            // a subscriber refused (503: undertow-blocking streams on 8 threads) was answered, and waits as an idle connection
            List<Swarm.Conn> streamed = conns.stream().filter(c -> c.status == 200).toList();
            Result r = new Result(fe, "streams that never read", conns.size(), server.alive(), probe, conns, Swarm.open(streamed),
                RobustnessTest.millisSince(started));
            r.record();
            r.check(Long.MAX_VALUE);
        }
        RobustnessTest.assertServesPromptly(server);
    }

    /** Commits {@code /updates?queries=500} one after another for {@code ms}, from 127.0.0.5, on one keep-alive connection. */
    private static void commitUpdates(ServerProcess server, long ms) throws Exception {
        long end = System.nanoTime() + ms * 1_000_000L;
        java.net.Socket socket = new java.net.Socket();
        socket.bind(new java.net.InetSocketAddress("127.0.0.5", 0));
        socket.connect(new java.net.InetSocketAddress(ServerProcess.BIND, server.port), 5_000);
        socket.setSoTimeout(10_000);
        try (RawConnection c = RawConnection.over(socket)) {
            while (System.nanoTime() < end) {
                RawResponse r = c.exchange(RawConnection.get("/updates?queries=500"));
                assertEquals(200, r.status, () -> "an update during the attack: " + r.status);
            }
        }
    }

    /**
     * One address opens 200 event streams at once: its share ({@value #CLIENT_STREAMS}, or half the
     * stream cap where that is smaller: a blocking mode streams on half its threads; the server says
     * which on {@code /metrics}) is answered 200 and the rest 503, while another client still gets its
     * stream; then it closes all of them and opens its share again at once: a closed stream leaves
     * its count at once, so every one of them is answered 200.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void aBurstOfStreamsFromOneAddress(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        RobustnessTest.assertServesPromptly(server);
        String subscribe = "GET /updates/events HTTP/1.1\r\n" + HOST + "\r\n";
        Swarm.Script burst = Swarm.Script.sending(subscribe);
        burst.perAddress = 1_000;
        burst.firstAddress = 900;
        int share = BEFORE ? CLIENT_STREAMS : (int) ServerSentEventsTest.metric(server, "kiln_limits{limit=\"max_client_streams\"}");
        long started = System.nanoTime();
        try (Probe probe = new Probe(server.port); Swarm swarm = new Swarm(server.port)) {
            List<Swarm.Conn> conns = swarm.start(200, burst);
            Swarm.awaitConnected(conns, 10_000);
            awaitAnswered(conns, 10_000);
            Map<String, Integer> first = Swarm.statuses(conns);
            try (RawConnection other = RawConnection.open(server)) {
                ServerSentEventsTest.subscribe(other, "");  // another client: its own share
            }
            Swarm.closeAll(conns);
            Thread.sleep(1_000);  // the server notices the closes: within a second
            Swarm.Script again = Swarm.Script.sending(subscribe);
            again.perAddress = 1_000;
            again.firstAddress = 900;
            List<Swarm.Conn> second = swarm.start(share, again);
            Swarm.awaitConnected(second, 10_000);
            awaitAnswered(second, 10_000);
            probe.close();
            Result r = new Result(fe, "a burst of streams from one address", conns.size(), server.alive(), probe, second, 0,
                RobustnessTest.millisSince(started));
            r.record();
            assertEquals(Map.of("200", share, "503", 200 - share), first,
                () -> fe.id + ": one address's 200 streams, " + share + " allowed it: " + r.line());
            assertEquals(Map.of("200", share), Swarm.statuses(second),
                () -> fe.id + ": its share again a second after it closed every stream: " + r.line());
            r.check(Long.MAX_VALUE);
        }
        RobustnessTest.assertServesPromptly(server);
    }

    /** Waits until each of {@code conns} got a status line or closed, at most {@code ms}. */
    private static void awaitAnswered(List<Swarm.Conn> conns, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + ms * 1_000_000L;
        while (System.nanoTime() < deadline && conns.stream().anyMatch(c -> c.status == 0 && c.closedAt == 0)) Thread.sleep(20);
    }

    /**
     * Runs one attack with the probe watching: {@code n} connections of {@code script}, then waits
     * for the server to close them all.
     *
     * @param closeWithinMs how long after its last byte each connection may stay open, beyond the
     *                      slack; the header timeout bounds every one anyway
     */
    private static void attack(FrontEnd fe, String name, int n, Swarm.Script script, long closeWithinMs) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        RobustnessTest.assertServesPromptly(server);
        long bound = Math.max(closeWithinMs, HEADER_TIMEOUT_MS) + SLACK_MS;
        long started = System.nanoTime();
        List<Swarm.Conn> conns;
        int stillOpen;
        try (Probe probe = new Probe(server.port); Swarm swarm = new Swarm(server.port)) {
            Thread.sleep(300);  // the probe's first round trips before the attack
            conns = swarm.start(n, script);
            Swarm.awaitConnected(conns, 20_000);
            stillOpen = Swarm.awaitClosed(conns, 20_000 + bound);
            Thread.sleep(500);
            probe.close();
            Result r = new Result(fe, name, n, server.alive(), probe, conns, stillOpen, RobustnessTest.millisSince(started));
            r.record();
            r.check(bound);
        }
        RobustnessTest.assertServesPromptly(server);
    }

    /** One attack's figures, as the closing note's table lists them. */
    record Result(FrontEnd fe, String attack, int connections, boolean alive, double heapPeakMb,
                  double requestMemoryPeakMb, double requestMemoryLimitMb, double p99Ms, double maxMs, int probes, int probeFailures,
                  String probeFailure, int stillOpen, long slowestCloseMs, Map<String, Integer> statuses, long tookMs) {
        Result(FrontEnd fe, String attack, int n, boolean alive, Probe p, List<Swarm.Conn> conns, int stillOpen, long tookMs) {
            this(fe, attack, n, alive, p.heapPeak() / (1 << 20), p.requestMemoryPeak() / (1 << 20),
                p.requestMemoryLimit() / (1 << 20), p.latencyMs(0.99), p.latencyMs(1.0), p.requests(), p.failures(), p.lastFailure(),
                stillOpen, Swarm.slowestCloseMs(conns), Swarm.statuses(conns), tookMs);
        }

        String line() {
            return String.format(Locale.ROOT, "%s\t%s\t%d\t%s\t%.0f\t%.1f\t%.0f\t%.0f\t%.0f\t%d\t%d\t%d\t%d\t%s\t%d",
                fe.id, attack, connections, alive ? "alive" : "DEAD", heapPeakMb, requestMemoryPeakMb,
                requestMemoryLimitMb, p99Ms, maxMs, probes, probeFailures, stillOpen, slowestCloseMs, statuses, tookMs);
        }

        void record() {
            String line = line();
            System.out.println("hostile: " + line.replace('\t', ' '));
            try {
                Files.writeString(Dirs.target().resolve("hostile-clients.tsv"), line + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        void check(long closeBoundMs) {
            assertTrue(alive, () -> fe.id + " died under " + attack + ": " + line());
            assertTrue(Double.isNaN(requestMemoryPeakMb) || requestMemoryPeakMb <= requestMemoryLimitMb,
                () -> fe.id + " held more request memory than its limit under " + attack + ": " + line());
            assertTrue(p99Ms <= P99_MS, () -> fe.id + " answered /plaintext in " + p99Ms + " ms at p99 under " + attack + " (last failure: "
                + probeFailure + "): " + line());
            assertEquals(0, stillOpen, () -> fe.id + " kept " + stillOpen + " of the attack's connections open: " + line());
            assertTrue(slowestCloseMs <= closeBoundMs, () -> fe.id + " closed an attack's connection only " + slowestCloseMs
                + " ms after its last byte (bound " + closeBoundMs + " ms): " + line());
        }
    }
}

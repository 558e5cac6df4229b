package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What an open event stream holds outside the heap: a few KB at most. With Jetty's default, each
 * open stream on a Jetty front end (jetty-async, jetty-blocking, jetty-loom, and comsat on Jetty
 * 9.4) kept the 32 KB direct buffer Jetty aggregates a response in, for as long as the stream was
 * open: under {@code ./ab-sweep.sh --subscribers 20000 --vps}, 7,900 subscribers filled the direct
 * memory of make demo's 256 MB heap, and jetty-async and comsat exited with OutOfMemoryError
 * (jetty-loom failed every new stream). Here every front end runs with make demo's flags and 8 MB
 * of direct memory, and {@value #STREAMS} streams are opened (19 MB of such buffers): each is
 * answered (200, or 503 beyond a blocking mode's share of its threads), each one answered 200 gets
 * the event of an update committed afterwards, and the server is alive and serving.
 */
@Tag("hostile")
class StreamBuffersTest {
    static final int STREAMS = 600;
    private static final String HOST = "Host: 127.0.0.1\r\n";

    @RegisterExtension
    static final Servers SERVERS = new Servers("StreamBuffersTest", "--max-client-streams", "64")
        .withDemoJvmFlags("-XX:MaxDirectMemorySize=8m").restartingTheDead();

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    @Timeout(120)
    void manyOpenStreamsHoldNoDirectBufferEach(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        Swarm.Script s = Swarm.Script.sending("GET /updates/events HTTP/1.1\r\n" + HOST + "\r\n");
        s.perAddress = 30;
        try (Swarm swarm = new Swarm(server.port)) {
            List<Swarm.Conn> conns = swarm.start(STREAMS, s);
            Swarm.awaitConnected(conns, 20_000);
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (conns.stream().anyMatch(c -> c.status == 0 && c.closedAt == 0) && System.nanoTime() < deadline) Thread.sleep(50);
            Map<String, Integer> statuses = Swarm.statuses(conns);
            List<Swarm.Conn> streaming = conns.stream().filter(c -> c.status == 200).toList();
            assertTrue(server.alive(), () -> fe.id + " died opening " + STREAMS + " streams: " + statuses);
            assertEquals(STREAMS, conns.stream().filter(c -> c.status == 200 || c.status == 503).count(),
                () -> "every stream answered 200 or 503: " + statuses);
            // undertow-blocking streams on half of its 16 threads: 8
            assertTrue(streaming.size() >= 8, () -> "at least 8 streams open: " + statuses);

            long[] before = streaming.stream().mapToLong(c -> c.received).toArray();
            try (RawConnection c = RawConnection.open(server)) {
                RawResponse r = c.exchange(RawConnection.get("/updates?queries=20"));
                assertEquals(200, r.status, () -> "the update: " + r.status);
            }
            deadline = System.nanoTime() + 20_000_000_000L;
            int got = 0;
            while (System.nanoTime() < deadline) {
                got = 0;
                for (int i = 0; i < before.length; i++) {
                    if (streaming.get(i).received > before[i]) got++;
                }
                if (got == before.length) break;
                Thread.sleep(50);
            }
            int delivered = got;
            assertEquals(streaming.size(), delivered, () -> "streams that got the update's event, of " + streaming.size() + " open");
            assertEquals(streaming.size(), Swarm.open(streaming), "the streams are still open");
        }
        assertTrue(server.alive(), fe.id + " is alive");
        RobustnessTest.assertServesPromptly(server);
    }
}

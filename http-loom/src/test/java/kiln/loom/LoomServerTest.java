package kiln.loom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingStream;
import kiln.demo.DemoDb;
import kiln.demo.Endpoints;
import kiln.demo.Endpoint;
import kiln.demo.Endpoints;
import kiln.http.Response;
import kiln.server.Metrics;
import kiln.server.VirtualThreads;
import kiln.db.Db;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the virtual-thread front end adds to the shared HTTP layer: handlers run on virtual threads,
 * a blocked handler parks its virtual thread instead of holding a carrier, nothing kiln runs on
 * the request path pins a carrier, and an older JDK is refused with one line. (The HTTP contract,
 * limits, timeouts and durability are the conformance suite's, run against the jar.)
 */
@Timeout(120)
class LoomServerTest {
    @TempDir Path dir;

    private static String get(int port, String target) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(20_000);
            s.getOutputStream().write(("GET " + target + " HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            return readToEnd(s.getInputStream());
        }
    }

    /** @return an event stream's response up to its opening {@code retry} field (the stream itself never ends) */
    private static String streamStart(int port, String target) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(20_000);
            s.getOutputStream().write(("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            InputStream in = s.getInputStream();
            while (!got.toString(StandardCharsets.ISO_8859_1).contains("retry: 2000\n\n")) {
                int b = in.read();
                if (b < 0) break;
                got.write(b);
            }
            return got.toString(StandardCharsets.ISO_8859_1);
        }
    }

    private static String readToEnd(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        in.transferTo(all);
        return all.toString(StandardCharsets.ISO_8859_1);
    }

    private static String body(String response) {
        return response.substring(response.indexOf("\r\n\r\n") + 4);
    }

    @Test
    void handlersRunOnVirtualThreads() throws Exception {
        LoomServer server = new LoomServer("127.0.0.1", 0, new Router()
            .get("/who", req -> Response.text(Thread.currentThread().getName() + " virtual=" + VirtualThreads.isVirtual(Thread.currentThread()))));
        server.start();
        try {
            String who = body(get(server.port(), "/who"));
            assertTrue(who.startsWith("kiln-conn-") && who.endsWith(" virtual=true"), who);
        } finally {
            server.stop(1_000);
        }
    }

    /**
     * 200 connections whose handlers each block 1 s in Thread.sleep, at once: on virtual threads
     * they all park together and finish in about a second. Were each sleep to hold a carrier (2 on
     * this machine, one per core), they would take 100 s.
     */
    @Test
    void aBlockedHandlerParksItsVirtualThreadNotTheCarrier() throws Exception {
        LoomServer server = new LoomServer("127.0.0.1", 0, new Router().get("/sleep", req -> {
            Thread.sleep(1_000);
            return Response.text("slept");
        }));
        server.start();
        List<Socket> sockets = new ArrayList<>();
        try {
            long start = System.nanoTime();
            for (int i = 0; i < 200; i++) {
                Socket s = new Socket("127.0.0.1", server.port());
                s.setSoTimeout(60_000);
                s.getOutputStream().write("GET /sleep HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                sockets.add(s);
            }
            for (Socket s : sockets) assertEquals("slept", body(readToEnd(s.getInputStream())));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms < 30_000, "200 sleeping handlers took " + ms + " ms: the sleeps held carrier threads");
        } finally {
            for (Socket s : sockets) s.close();
            server.stop(1_000);
        }
    }

    /** A class whose initializer parks: a virtual thread that runs it stays pinned (JDK 21-25), the test's control. */
    static final class SleepsWhileInitializing {
        static final long SLEPT;

        static {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            SLEPT = 50;
        }
    }

    /**
     * Serves every registry endpoint (durable writes and delays among them: the waits) while JFR
     * records every {@code jdk.VirtualThreadPinned} event, however short. None may be recorded
     * until the control handler parks inside a class initializer, which pins; the control's event
     * arriving shows the recording would have seen one.
     */
    @Test
    void theRegistryEndpointsNeverPinACarrier() throws Exception {
        List<RecordedEvent> pinned = new CopyOnWriteArrayList<>();
        try (Db db = Db.open(dir); RecordingStream jfr = new RecordingStream()) {
            jfr.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            jfr.onEvent("jdk.VirtualThreadPinned", pinned::add);
            jfr.startAsync();
            Router router = Endpoints.addTo(new Router(Metrics.create(db)), DemoDb.open(db))
                .get("/pin-control", req -> Response.text("slept " + SleepsWhileInitializing.SLEPT));
            LoomServer server = new LoomServer("127.0.0.1", 0, router);
            server.start();
            try {
                for (int round = 0; round < 3; round++) {
                    for (Endpoint e : Endpoints.ALL) {
                        String target = e.path.equals("/hello") ? "/hello?delay=5" : e.example;
                        String response = e.path.endsWith("/events") ? streamStart(server.port(), target) : get(server.port(), target);
                        assertTrue(response.startsWith("HTTP/1.1 200 "), target + ": " + response);
                    }
                }
                // JFR delivers events about once a second: give the ones above time to arrive
                Thread.sleep(2_500);
                // the JDK's own virtual threads (JDK 25's I/O pollers, sun.nio.ch.Poller.subPollerLoop) may pin
                // for 0 ms while they park: not an endpoint's, so only events with a frame of kiln's count
                List<String> beforeControl = describe(pinned).stream().filter(s -> s.contains("\tat kiln.")).toList();
                assertEquals(List.of(), beforeControl, "a registry endpoint pinned its carrier");
                assertEquals("slept 50", body(get(server.port(), "/pin-control")));
                // wait for the control's own event: the JDK pollers' events may already be in the list
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (!controlPinned(pinned) && System.nanoTime() < deadline) Thread.sleep(50);
                assertTrue(controlPinned(pinned), "the control's pinning was recorded: " + describe(pinned));
            } finally {
                server.stop(1_000);
            }
        }
    }

    private static boolean controlPinned(List<RecordedEvent> events) {
        return describe(events).stream().anyMatch(s -> s.contains("SleepsWhileInitializing"));
    }

    private static List<String> describe(List<RecordedEvent> events) {
        List<String> all = new ArrayList<>();
        for (RecordedEvent e : events) {
            StringBuilder s = new StringBuilder("pinned ").append(e.getDuration().toMillis()).append(" ms");
            if (e.getStackTrace() != null) {
                for (RecordedFrame f : e.getStackTrace().getFrames()) {
                    s.append("\n\tat ").append(f.getMethod().getType().getName()).append('.').append(f.getMethod().getName());
                }
            }
            all.add(s.toString());
        }
        return all;
    }

    /** On JDK 17 the server does not start: exit 1 and one line that names the JDK to use. */
    @Test
    void anOlderJdkIsRefusedWithOneLine() throws Exception {
        // Maven runs the tests in http-loom/, beside scripts/
        Process find = new ProcessBuilder(Path.of("../scripts/find-java.sh").toString(), "17").start();
        String java17 = new String(find.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertEquals(0, find.waitFor(), "the build's JDK 17 is on this machine");
        Process p = new ProcessBuilder(java17, "-cp", System.getProperty("java.class.path"), LoomDemo.class.getName(),
            "--port", "0", "--bind", "127.0.0.1", "--data", dir.resolve("data").toString()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(1, p.exitValue(), err);
        assertEquals("", out);
        Set<String> lines = new TreeSet<>(err.strip().lines().toList());
        assertEquals(1, lines.size(), err);
        assertTrue(err.startsWith("kiln-loom: error: virtual threads need JDK 21 or newer; this is JDK 17 (")
            && err.contains("run kiln-loom with a JDK 21+ java"), err);
    }
}

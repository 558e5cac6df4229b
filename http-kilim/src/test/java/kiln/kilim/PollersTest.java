package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import kilim.Pausable;
import kiln.http.Request;
import kiln.http.Response;

/**
 * One poller per carrier: with {@code --threads 2} carrier 0 accepts and deals the connections to
 * both selectors in turn, and every request of a connection is read, handled and answered on the
 * thread of the carrier it was dealt to. Each case on both transports (the other tests of this
 * module and the conformance suite run the default, epoll here).
 */
class PollersTest {
    private KilimServer server;

    @AfterEach
    void stop() {
        if (server != null) server.stop(1_000);
    }

    /** Writes one GET for {@code path} on {@code s}. */
    private static void get(Socket s, String path) throws Exception {
        OutputStream out = s.getOutputStream();
        out.write(("GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    /** Reads one response's body from {@code in}. */
    private static String body(BufferedReader in) throws Exception {
        int length = -1;
        for (String line; !(line = in.readLine()).isEmpty();) {
            if (line.regionMatches(true, 0, "Content-Length:", 0, 15)) length = Integer.parseInt(line.substring(15).trim());
        }
        char[] body = new char[length];
        for (int got = 0; got < length;) got += in.read(body, got, length - got);
        return new String(body);
    }

    /** Sends {@code n} keep-alive requests for /thread on one connection: the thread names that handled them. */
    private static Set<String> threadsOfOneConnection(int port, int n) throws Exception {
        Set<String> seen = new HashSet<>();
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5_000);
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
            for (int i = 0; i < n; i++) {
                get(s, "/thread");
                seen.add(body(in));
            }
        }
        return seen;
    }

    /** @return whether {@code table} (/proc/net/tcp or tcp6) lists a listening socket on {@code port} */
    private static boolean listensIn(String table, int port) throws Exception {
        String local = String.format(":%04X ", port);
        for (String line : Files.readAllLines(Path.of("/proc/net", table))) {
            String[] f = line.trim().split("\\s+");
            if (f.length > 3 && (f[1] + " ").endsWith(local) && f[3].equals("0A")) return true;  // 0A: TCP_LISTEN
        }
        return false;
    }

    /**
     * An IPv4 bind address gets an IPv4 listening socket, not the JDK's default IPv6 one bound to
     * the mapped address: its connections skip the IPv6 socket layer. Each is served, and its
     * client's address read from the IPv4 accept.
     */
    @ParameterizedTest
    @EnumSource(names = {"EPOLL", "NIO"})
    void anIpv4AddressIsListenedOnWithAnIpv4Socket(KilimServer.Transport transport) throws Exception {
        assumeTrue(Files.exists(Path.of("/proc/net/tcp6")), "Linux's /proc/net");
        Router router = new Router().get("/peer", req -> Response.text(req.remoteAddress().getAddress().getHostAddress()));
        server = new KilimServer("127.0.0.1", 0, 1, router).transport(transport);
        server.start();
        assertTrue(listensIn("tcp", server.port()), "listed among the IPv4 sockets");
        assertFalse(listensIn("tcp6", server.port()), "not among the IPv6 ones");
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(5_000);
            get(s, "/peer");
            assertEquals("127.0.0.1", body(new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1))));
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"EPOLL", "NIO"})
    void connectionsAreDealtToEveryCarrierAndStayOnTheirs(KilimServer.Transport transport) throws Exception {
        Router router = new Router().get("/thread", req -> Response.text(Thread.currentThread().getName()));
        server = new KilimServer("127.0.0.1", 0, 2, router).transport(transport);
        server.start();
        Map<String, Integer> connectionsPerThread = new HashMap<>();
        for (int c = 0; c < 6; c++) {
            Set<String> threads = threadsOfOneConnection(server.port(), 20);
            assertEquals(1, threads.size(), () -> "every request of a connection on one carrier's thread: " + threads);
            connectionsPerThread.merge(threads.iterator().next(), 1, Integer::sum);
        }
        assertEquals(Map.of("kiln-selector", 3, "kiln-carrier-1", 3), connectionsPerThread,
            "six connections dealt to the two carriers in turn");
        assertTrue(server.connections() <= 6, "the closed connections are counted out");
    }

    /**
     * A poller serves a connection the moment its select reports it, with a fiber it runs on its own
     * thread. A handler that blocks that thread (the app's bug) blocks the poller too: its carrier is
     * handed to a new thread, which selects and serves the other connections meanwhile, and the old
     * thread, once the handler returns, answers its request and leaves the poller's loop to the new one.
     */
    @ParameterizedTest
    @EnumSource(names = {"EPOLL", "NIO"})
    void aHandlerThatBlocksThePollersThreadDoesNotStopTheOtherConnections(KilimServer.Transport transport) throws Exception {
        CountDownLatch blocking = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Router router = new Router()
            .get("/thread", req -> Response.text(Thread.currentThread().getName()))
            .get("/block", req -> {
                blocking.countDown();
                release.await(10, TimeUnit.SECONDS);  // the trap: a blocking wait on the carrier
                return Response.text("unblocked");
            });
        server = new KilimServer("127.0.0.1", 0, 1, router).blockedCarrierThreshold(50).handOffThreshold(50).transport(transport);
        server.start();
        try (Socket blocked = new Socket("127.0.0.1", server.port())) {
            blocked.setSoTimeout(5_000);
            get(blocked, "/block");
            assertTrue(blocking.await(5, TimeUnit.SECONDS), "the handler runs");
            assertEquals(Set.of("kiln-selector"), threadsOfOneConnection(server.port(), 3),
                "another connection is served by the carrier's new thread while the handler blocks the old one");
            release.countDown();
            assertEquals("unblocked", body(new BufferedReader(new InputStreamReader(blocked.getInputStream(), StandardCharsets.ISO_8859_1))));
        }
        assertEquals(Set.of("kiln-selector"), threadsOfOneConnection(server.port(), 3), "and afterwards, by one poller");
    }

    /**
     * A request that arrives while the fiber serving its connection is paused (here in a handler
     * awaiting a future): the selector reports it to that fiber, which serves it after the first,
     * in order, on the same connection.
     */
    @ParameterizedTest
    @EnumSource(names = {"EPOLL", "NIO"})
    void aRequestThatArrivesWhileItsConnectionsFiberIsPausedIsServedAfterTheFirst(KilimServer.Transport transport) throws Exception {
        CompletableFuture<String> later = new CompletableFuture<>();
        CountDownLatch waiting = new CountDownLatch(1);
        Router router = new Router()
            .get("/thread", req -> Response.text(Thread.currentThread().getName()))
            .get("/later", new Handler() {
                @Override
                public Response handle(Request req) throws Pausable {
                    waiting.countDown();
                    return Response.text(Fibers.await(later));
                }
            });
        server = new KilimServer("127.0.0.1", 0, 1, router).transport(transport);
        server.start();
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(5_000);
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
            get(s, "/later");
            assertTrue(waiting.await(5, TimeUnit.SECONDS), "the handler waits");
            get(s, "/thread");  // arrives while the fiber is paused
            Thread.sleep(100);  // a few selects meanwhile: the fiber must not be resumed by them
            assertTrue(s.getInputStream().available() == 0, "nothing answered before the future completes");
            later.complete("done");
            assertEquals("done", body(in));
            assertEquals("kiln-selector", body(in));
        }
    }
}

package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import kiln.http.Response;

/**
 * One poller per carrier: with {@code --threads 2} carrier 0 accepts and deals the connections to
 * both selectors in turn, and every request of a connection is read, handled and answered on the
 * thread of the carrier it was dealt to.
 */
class PollersTest {
    private KilimServer server;

    @AfterEach
    void stop() {
        if (server != null) server.stop(1_000);
    }

    /** Sends {@code n} keep-alive requests for /thread on one connection: the thread names that handled them. */
    private static Set<String> threadsOfOneConnection(int port, int n) throws Exception {
        Set<String> seen = new HashSet<>();
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
            for (int i = 0; i < n; i++) {
                out.write("GET /thread HTTP/1.1\r\nHost: t\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                int length = -1;
                for (String line; !(line = in.readLine()).isEmpty();) {
                    if (line.regionMatches(true, 0, "Content-Length:", 0, 15)) length = Integer.parseInt(line.substring(15).trim());
                }
                char[] body = new char[length];
                for (int got = 0; got < length;) got += in.read(body, got, length - got);
                seen.add(new String(body));
            }
        }
        return seen;
    }

    @Test
    void connectionsAreDealtToEveryCarrierAndStayOnTheirs() throws Exception {
        Router router = new Router().get("/thread", req -> Response.text(Thread.currentThread().getName()));
        server = new KilimServer("127.0.0.1", 0, 2, router);
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
}

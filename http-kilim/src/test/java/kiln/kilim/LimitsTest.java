package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import kiln.http.Response;
import kiln.server.ServerLimits;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The server's defences that Kilim's own NIO layer lacks: idle and header timeouts, and the
 * connection cap. Timing is asserted only as "eventually", never as an upper bound.
 */
@Timeout(30)
class LimitsTest {
    private KilimServer server;

    @BeforeEach
    void start() throws IOException {
        Router router = new Router().get("/plaintext", req -> Response.text("Hello, World!"));
        server = new KilimServer("127.0.0.1", 0, 2, router)
            .limits(ServerLimits.defaults().idleTimeout(1_000).headerTimeout(1_000).maxConnections(3));
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(1_000);
    }

    private Socket connect() throws IOException {
        Socket s = new Socket("127.0.0.1", server.port());
        s.setSoTimeout(20_000);
        return s;
    }

    private static String readToEnd(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        in.transferTo(all);
        return all.toString(StandardCharsets.ISO_8859_1);
    }

    private String get(Socket s) throws IOException {
        s.getOutputStream().write("GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        byte[] buf = new byte[4096];
        int n = s.getInputStream().read(buf);
        return new String(buf, 0, Math.max(n, 0), StandardCharsets.ISO_8859_1);
    }

    @Test
    void idleKeepAliveConnectionIsClosed() throws IOException {
        try (Socket s = connect()) {
            assertTrue(get(s).startsWith("HTTP/1.1 200 OK"));
            assertEquals("", readToEnd(s.getInputStream()), "an idle keep-alive connection ends with EOF, no bytes");
        }
    }

    @Test
    void slowRequestGets408AndIsClosed() throws IOException {
        try (Socket s = connect()) {
            s.getOutputStream().write("GET /plaintext HTTP/1.1\r\nHo".getBytes(StandardCharsets.US_ASCII));
            String response = readToEnd(s.getInputStream());
            assertTrue(response.startsWith("HTTP/1.1 408 Request Timeout\r\n"), response);
            assertTrue(response.contains("\r\nConnection: close\r\n"), response);
        }
    }

    @Test
    void slowlorisTricklingBytesStillTimesOut() throws Exception {
        try (Socket s = connect()) {
            s.getOutputStream().write("GET /plaintext HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
            // one header byte every 200 ms: each read succeeds, but the request never completes
            String response = null;
            for (int i = 0; i < 50 && response == null; i++) {
                try {
                    s.getOutputStream().write('X');
                    s.getOutputStream().flush();
                } catch (IOException closedByServer) {
                    break;
                }
                Thread.sleep(200);
                if (s.getInputStream().available() > 0) response = readToEnd(s.getInputStream());
            }
            if (response == null) response = readToEnd(s.getInputStream());
            assertTrue(response.startsWith("HTTP/1.1 408"), "got: " + response);
        }
    }

    @Test
    void connectionsOverTheCapGet503AndTheServerKeepsServing() throws IOException {
        List<Socket> held = openServed(3);
        String refused = readToEnd(connect().getInputStream());
        closeAll(held);
        assertTrue(refused.startsWith("HTTP/1.1 503 Service Unavailable\r\n"), refused);
        assertTrue(refused.contains("\r\nRetry-After: 1\r\n") && refused.contains("\r\nConnection: close\r\n"), refused);
        assertTrue(servedEventually(), "once the held connections close, new ones are served again");
    }

    private List<Socket> openServed(int n) throws IOException {
        List<Socket> held = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Socket s = connect();
            held.add(s);
            assertTrue(get(s).startsWith("HTTP/1.1 200 OK"), "connection " + i + " is served");
        }
        return held;
    }

    private static void closeAll(List<Socket> sockets) throws IOException {
        for (Socket s : sockets) s.close();
    }

    /** The server sees closed connections asynchronously: retry a few times. */
    private boolean servedEventually() throws IOException {
        for (int attempt = 0; attempt < 100; attempt++) {
            Socket s = connect();
            boolean ok = get(s).startsWith("HTTP/1.1 200 OK");
            s.close();
            if (ok) return true;
        }
        return false;
    }
}

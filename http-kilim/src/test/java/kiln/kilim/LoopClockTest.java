package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;

import kiln.http.Response;
import kiln.server.ServerLimits;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The Kilim server keeps its connections' deadlines and {@code Date} headers by a clock its loop
 * reads as each poll returns ({@code kiln.server.LoopClock}): after the server slept a while, with
 * its blocked-carrier watch at rest, the first request must not get the time the loop last read
 * before it slept. Each check here fails with a clock that was not read as the poll returned.
 */
@Timeout(90)
class LoopClockTest {
    private KilimServer server;

    @AfterEach
    void stop() {
        if (server != null) server.stop(1_000);
    }

    @ParameterizedTest
    @EnumSource(names = {"EPOLL", "NIO"})
    void aRequestAfterTheServerSleptGetsTheTimeOfNow(KilimServer.Transport transport) throws Exception {
        server = new KilimServer("127.0.0.1", 0, 1, new Router().get("/plaintext", req -> Response.text("Hello, World!")))
            .limits(ServerLimits.defaults().idleTimeout(3_000)).transport(transport);
        server.start();
        Thread.sleep(5_000);  // the loop sleeps, the watch rests (after 100 ms): nothing reads the loop's clock
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream().write("GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] buf = new byte[4096];
            int n = s.getInputStream().read(buf);
            Instant received = Instant.now();
            String response = new String(buf, 0, Math.max(n, 0), StandardCharsets.ISO_8859_1);
            assertTrue(response.startsWith("HTTP/1.1 200 OK"), response);

            String date = response.lines().filter(l -> l.startsWith("Date: ")).findFirst().orElseThrow().substring(6);
            Instant dated = ZonedDateTime.parse(date, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
            long off = Duration.between(dated, received).toMillis();
            assertTrue(off >= 0 && off < 2_000, () -> "Date " + date + " is " + off + " ms before the response was received, not within its second");

            // its idle timeout (3 s) runs from the response: a deadline armed 5 s back would be past
            // already, and the reaper (once a second) would close the connection within 1 s
            s.setSoTimeout(2_000);
            InputStream in = s.getInputStream();
            assertThrows(SocketTimeoutException.class, in::read, "the connection is still open 2 s after its response");
            s.setSoTimeout(20_000);
            assertTrue(in.read() < 0, "then the idle timeout closes it");
        }
    }
}

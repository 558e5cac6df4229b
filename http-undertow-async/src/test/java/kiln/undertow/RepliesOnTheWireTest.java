package kiln.undertow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

import io.undertow.Undertow;
import io.undertow.UndertowOptions;
import kiln.http.HttpException;
import kiln.http.Limits;
import kiln.http.Response;
import kiln.server.Metrics;
import kiln.server.Step;
import kiln.server.StepRouter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What Undertow writes for the responses the demo never sends: a 204 (no Content-Type, no
 * Content-Length, no body: RFC 9110 sections 15.3.5 and 8.6), and a handler's error as problem
 * details for a client that prefers JSON. Header lines compare in any order (Undertow's hash order).
 */
@Timeout(60)
class RepliesOnTheWireTest {
    private static Undertow undertow;

    @BeforeAll
    static void start() {
        StepRouter router = new StepRouter(Metrics.off())
            .steps("DELETE", "/things/{id}", request -> Step.of(Response.noContent()))
            .steps("GET", "/taken", request -> {
                throw new HttpException(409, "taken");
            });
        undertow = Undertow.builder().addHttpListener(0, "127.0.0.1")
            .setServerOption(UndertowOptions.ALWAYS_SET_DATE, false)
            .setServerOption(UndertowOptions.ALWAYS_SET_KEEP_ALIVE, false)
            .setHandler(new ThreadPerRequestHandler(router, new kiln.server.OpenStreams(null), Limits.MAX_CONTENT,
                new Exchanges.Reading(kiln.http.spi.MemoryBudget.UNLIMITED, new kiln.server.ClientDeadlines(kiln.server.ServerLimits.defaults()))))
            .build();
        undertow.start();
    }

    @AfterAll
    static void stop() {
        undertow.stop();
    }

    /** @return the status line, the header lines sorted (Date's value masked), then the body */
    private static List<String> exchange(String request) throws Exception {
        int port = ((InetSocketAddress) undertow.getListenerInfo().get(0).getAddress()).getPort();
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            String all = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            int end = all.indexOf("\r\n\r\n");
            assertTrue(end > 0, all);
            List<String> lines = Arrays.asList(all.substring(0, end).replaceFirst("Date: [^\r]*", "Date: D").split("\r\n"));
            List<String> head = lines.subList(0, 1);
            List<String> fields = lines.subList(1, lines.size()).stream().sorted().collect(Collectors.toList());
            return List.of(head.get(0), String.join("|", fields), all.substring(end + 4));
        }
    }

    @Test
    void a204HasItsReasonPhraseAndNoContentTypeContentLengthOrBody() throws Exception {
        assertEquals(List.of("HTTP/1.1 204 No Content", "Connection: close|Date: D|Server: kiln", ""),
            exchange("DELETE /things/7 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
    }

    @Test
    void anErrorIsProblemDetailsWhenAcceptPrefersJsonAndTextOtherwise() throws Exception {
        String body = "{\"type\":\"about:blank\",\"title\":\"Conflict\",\"status\":409,\"detail\":\"taken\"}";
        assertEquals(List.of("HTTP/1.1 409 Conflict",
                "Connection: close|Content-Length: " + body.length() + "|Content-Type: application/problem+json|Date: D|Server: kiln", body),
            exchange("GET /taken HTTP/1.1\r\nHost: h\r\nAccept: application/json\r\nConnection: close\r\n\r\n"));
        assertEquals(List.of("HTTP/1.1 409 Conflict",
                "Connection: close|Content-Length: 20|Content-Type: text/plain; charset=UTF-8|Date: D|Server: kiln", "409 Conflict: taken\n"),
            exchange("GET /taken HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nConnection: close\r\n\r\n"));
    }
}

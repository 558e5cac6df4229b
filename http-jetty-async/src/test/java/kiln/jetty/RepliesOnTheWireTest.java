package kiln.jetty;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import kiln.http.HttpException;
import kiln.http.Limits;
import kiln.http.Response;
import kiln.server.Metrics;
import kiln.server.ModeOptions;
import kiln.server.OpenStreams;
import kiln.server.ServerOptions;
import kiln.server.Step;
import kiln.server.StepRouter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What Jetty writes for the replies the demo never sends: a 204 (no Content-Type, no
 * Content-Length, no body: RFC 9110 sections 15.3.5 and 8.6), and a handler's error as problem
 * details for a client that prefers JSON.
 */
@Timeout(60)
class RepliesOnTheWireTest {
    private static JettyServer server;

    @BeforeAll
    static void start() throws Exception {
        StepRouter router = new StepRouter(Metrics.off())
            .steps("DELETE", "/things/{id}", request -> Step.of(Response.noContent()))
            .steps("GET", "/teapot", request -> {
                throw new HttpException(409, "taken");
            });
        server = new JettyServer(ServerOptions.of("--port", "0", "--bind", "127.0.0.1"), ModeOptions.Mode.BLOCKING, new BlockingServlet(router, new OpenStreams(null), Limits.MAX_CONTENT,
            new Content.Limits(kiln.http.spi.MemoryBudget.UNLIMITED, new kiln.server.ClientDeadlines(kiln.server.ServerLimits.defaults())), Runnable::run));
        server.start();
    }

    @AfterAll
    static void stop() {
        server.stop(1_000);
    }

    /** @return the whole response to {@code request} (sent with Connection: close), its Date masked */
    private static String exchange(String request) throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replaceFirst("Date: [^\r]*\r\n", "Date: D\r\n");
        }
    }

    @Test
    void a204HasItsReasonPhraseAndNoContentTypeContentLengthOrBody() throws Exception {
        assertEquals("HTTP/1.1 204 No Content\r\nServer: kiln\r\nDate: D\r\nConnection: close\r\n\r\n",
            exchange("DELETE /things/7 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
    }

    @Test
    void anErrorIsProblemDetailsWhenAcceptPrefersJsonAndTextOtherwise() throws Exception {
        String body = "{\"type\":\"about:blank\",\"title\":\"Conflict\",\"status\":409,\"detail\":\"taken\"}";
        assertEquals("HTTP/1.1 409 Conflict\r\nServer: kiln\r\nDate: D\r\nContent-Type: application/problem+json\r\nContent-Length: "
            + body.length() + "\r\nConnection: close\r\n\r\n" + body,
            exchange("GET /teapot HTTP/1.1\r\nHost: h\r\nAccept: application/json\r\nConnection: close\r\n\r\n"));
        assertEquals("HTTP/1.1 409 Conflict\r\nServer: kiln\r\nDate: D\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: 20"
            + "\r\nConnection: close\r\n\r\n409 Conflict: taken\n",
            exchange("GET /teapot HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nConnection: close\r\n\r\n"));
    }
}

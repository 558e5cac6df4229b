package kiln.jetty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.server.ModeOptions;
import kiln.server.ServerOptions;
import kiln.server.VirtualThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code --mode loom}: Jetty runs the blocking servlet on virtual threads (on JDK 21+, where this
 * test runs), and {@code --mode blocking} on its pool's platform threads. A blocked request parks
 * its virtual thread, so the requests blocked at once are not bounded by the pool's 200 threads.
 */
@Timeout(120)
class LoomModeTest {
    /** Answers with the name of the thread it runs on and whether it is virtual, after an optional sleep. */
    static final class WhoServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
            String sleep = request.getParameter("sleep");
            if (sleep != null) {
                try {
                    Thread.sleep(Long.parseLong(sleep));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            Thread t = Thread.currentThread();
            byte[] body = (t.getName() + " virtual=" + VirtualThreads.isVirtual(t)).getBytes(StandardCharsets.UTF_8);
            response.setContentType("text/plain");
            response.setContentLength(body.length);
            response.getOutputStream().write(body);
        }
    }

    private static String who(ModeOptions.Mode mode) throws Exception {
        JettyServer server = new JettyServer(ServerOptions.of("--port", "0", "--bind", "127.0.0.1"), mode, new WhoServlet());
        server.start();
        try {
            HttpClient client = HttpClient.newHttpClient();
            return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/who")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        } finally {
            server.stop(1_000);
        }
    }

    @Test
    void loomModeRunsTheServletOnANamedVirtualThread() throws Exception {
        assertTrue(VirtualThreads.supported(), "this test runs on JDK 21+ (see the pom)");
        String loom = who(ModeOptions.Mode.LOOM);
        assertTrue(loom.startsWith(JettyServer.VIRTUAL_THREAD_PREFIX) && loom.endsWith(" virtual=true"), loom);
        String blocking = who(ModeOptions.Mode.BLOCKING);
        assertTrue(blocking.startsWith("kiln-jetty-") && blocking.endsWith(" virtual=false"), blocking);
    }

    /** Holds every request until {@link #TOGETHER} of them are in the servlet at once, or 30 s passed. */
    static final class GateServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient CountDownLatch allIn = new CountDownLatch(TOGETHER);

        @Override
        protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
            allIn.countDown();
            boolean together;
            try {
                together = allIn.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                together = false;
            }
            byte[] body = ("together=" + together + " virtual=" + VirtualThreads.isVirtual(Thread.currentThread())).getBytes(StandardCharsets.UTF_8);
            response.setContentType("text/plain");
            response.setContentLength(body.length);
            response.getOutputStream().write(body);
        }
    }

    /** More blocked requests at once than Jetty's pool has threads (at most 200). */
    static final int TOGETHER = 250;

    /**
     * {@value #TOGETHER} requests block in the servlet at the same time, each until all are in: on
     * virtual threads they all get in; on the pool's at most 200 platform threads they could not.
     */
    @Test
    void blockedRequestsAreNotBoundedByThePool() throws Exception {
        JettyServer server = new JettyServer(ServerOptions.of("--port", "0", "--bind", "127.0.0.1"), ModeOptions.Mode.LOOM, new GateServlet());
        server.start();
        try {
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
            URI uri = URI.create("http://127.0.0.1:" + server.port() + "/gate");
            List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
            for (int i = 0; i < TOGETHER; i++) all.add(client.sendAsync(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString()));
            for (CompletableFuture<HttpResponse<String>> f : all) {
                HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
                assertEquals(200, r.statusCode());
                assertEquals("together=true virtual=true", r.body());
            }
        } finally {
            server.stop(1_000);
        }
    }
}

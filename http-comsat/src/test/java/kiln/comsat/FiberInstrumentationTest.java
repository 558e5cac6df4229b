package kiln.comsat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.servlet.AsyncContext;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import co.paralleluniverse.fibers.Fiber;
import co.paralleluniverse.fibers.FiberForkJoinScheduler;
import co.paralleluniverse.fibers.SuspendExecution;
import co.paralleluniverse.fibers.instrument.JavaAgent;
import co.paralleluniverse.fibers.instrument.SuspendableHelper;
import co.paralleluniverse.fibers.servlet.FiberHttpServlet;
import co.paralleluniverse.strands.SuspendableRunnable;
import kiln.demo.DemoDb;
import kiln.server.ServerOptions;
import kiln.server.Step;
import kiln.db.Db;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pins that requests really run as instrumented Quasar fibers. A request whose fiber stack holds
 * uninstrumented frames can still be answered correctly (../shared/FACTS.md, "Quasar / Comsat"), so
 * correct responses prove nothing: this JVM runs with {@code -Dco.paralleluniverse.fibers.verifyInstrumentation=true}
 * (see the pom), under which Quasar checks every frame at every suspension and reports the
 * uninstrumented ones on stderr (or throws {@code VerifyInstrumentationException}); these tests
 * capture stderr and fail on such a report. {@link #anUninstrumentedFrameIsReported} shows the
 * check catches one.
 */
class FiberInstrumentationTest {
    /** What Quasar prints (or throws) when a fiber suspends through an uninstrumented frame, or when it cannot instrument a class. */
    static final Pattern QUASAR_COMPLAINT = Pattern.compile(
        "Uninstrumented|VerifyInstrumentationException|Forgot to instrument|Unable to instrument|\\[quasar\\] ERROR");

    @TempDir
    static Path data;

    private static final ByteArrayOutputStream STDERR = new ByteArrayOutputStream();
    private static PrintStream originalErr;
    private static Db db;
    private static ComsatServer server;

    @BeforeAll
    static void start() throws IOException {
        originalErr = System.err;
        System.setErr(new PrintStream(new Tee(originalErr, STDERR), true, StandardCharsets.UTF_8));
        db = Db.open(data);
        server = new ComsatServer(ServerOptions.of("--bind", "127.0.0.1", "--port", "0"),
            kiln.demo.Endpoints.addTo(new kiln.server.StepRouter(kiln.server.Metrics.off()), DemoDb.open(db)));
        server.start();
    }

    @AfterAll
    static void stop() {
        if (server != null) server.stop(1_000);
        if (db != null) db.close();
        System.setErr(originalErr);
    }

    @Test
    void quasarVerifiesInstrumentationInThisJvm() throws ReflectiveOperationException {
        assertTrue(JavaAgent.isActive(), "Quasar's agent is running");
        Field verify = Fiber.class.getDeclaredField("verifyInstrumentation");
        verify.setAccessible(true);
        assertTrue(verify.getBoolean(null), "Fiber.verifyInstrumentation: without it the checks below prove nothing");
    }

    /** Every frame between Quasar's Fiber.run and a suspension, in the order Comsat calls them. */
    @Test
    void everyMethodOnTheRequestPathIsInstrumented() throws ReflectiveOperationException {
        Class<?> runnable = Class.forName("co.paralleluniverse.fibers.servlet.FiberHttpServlet$ServletSuspendableRunnable");
        assertInstrumented(runnable.getDeclaredMethod("run"));
        assertInstrumented(FiberHttpServlet.class.getDeclaredMethod("exec",
            FiberHttpServlet.class, AsyncContext.class, HttpServletRequest.class, HttpServletResponse.class));
        // Listed in META-INF/suspendables: comsat-servlet 0.7.0 does not mark it. Its call of
        // service(HttpServletRequest, HttpServletResponse) is a suspendable call site because that
        // HttpServlet method is listed too; the method that runs is KilnServlet's override.
        assertInstrumented(FiberHttpServlet.class.getDeclaredMethod("exec0",
            FiberHttpServlet.class, AsyncContext.class, HttpServletRequest.class, HttpServletResponse.class));
        assertInstrumented(KilnServlet.class.getDeclaredMethod("service", HttpServletRequest.class, HttpServletResponse.class));
        assertInstrumented(KilnServlet.class.getDeclaredMethod("run", Step.class));
        for (Method m : KilnServlet.class.getDeclaredMethods()) {
            if (List.of(m.getExceptionTypes()).contains(SuspendExecution.class)) assertInstrumented(m);
        }
        assertInstrumented(FiberAwait.class.getDeclaredMethod("await", CompletableFuture.class));
    }

    @Test
    void suspendingRequestsRunOnlyThroughInstrumentedFrames() throws Exception {
        STDERR.reset();
        // Fiber.sleep parks; /updates parks in FiberAwait until the writer thread's durable commit;
        // sent at once, so that fibers are parked side by side.
        List<String> targets = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            targets.add("/hello?delay=20");
            targets.add("/updates?queries=3");
        }
        targets.addAll(List.of("/db", "/queries?queries=4", "/fortunes", "/plaintext"));
        ExecutorService clients = Executors.newFixedThreadPool(targets.size());
        try {
            List<Future<String>> answers = new ArrayList<>();
            for (String target : targets) {
                answers.add(clients.submit(() -> RawHttp.exchange(server.port(), "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
            }
            for (int i = 0; i < targets.size(); i++) {
                String target = targets.get(i);
                String r = answers.get(i).get(30, TimeUnit.SECONDS);
                assertTrue(r.startsWith("HTTP/1.1 200 OK\r\n"), () -> target + ":\n" + r);
                if (target.startsWith("/hello")) assertTrue(r.endsWith("\r\n\r\nHelloWorld"), r);
                if (target.startsWith("/updates")) assertEquals(3, r.split("randomNumber").length - 1, r);
            }
        } finally {
            clients.shutdownNow();
        }
        String err = STDERR.toString(StandardCharsets.UTF_8);
        Matcher complaint = QUASAR_COMPLAINT.matcher(err);
        assertFalse(complaint.find(), () -> "Quasar reported '" + complaint.group() + "' while serving:\n" + err);
    }

    /** The negative control: the same check does see an uninstrumented frame. */
    @Test
    void anUninstrumentedFrameIsReported() throws Exception {
        STDERR.reset();
        FiberForkJoinScheduler scheduler = new FiberForkJoinScheduler("uninstrumented-test", 1);
        Throwable failure = null;
        try {
            Fiber<Void> fiber = new Fiber<Void>(scheduler, (SuspendableRunnable) FiberInstrumentationTest::sleepThroughAPlainMethod).start();
            fiber.join(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            failure = e.getCause();
        } catch (TimeoutException e) {
            failure = e;
        } finally {
            scheduler.shutdown();
        }
        String report = STDERR.toString(StandardCharsets.UTF_8) + (failure == null ? "" : " " + failure);
        assertTrue(report.contains("Uninstrumented") || report.contains("VerifyInstrumentationException"),
            () -> "no report of the uninstrumented frame; stderr and failure:\n" + report);
        assertTrue(report.contains("plainSleep"), () -> "the report names the uninstrumented method:\n" + report);
    }

    private static void sleepThroughAPlainMethod() throws SuspendExecution {
        plainSleep();
    }

    /** Not suspendable to Quasar (it neither declares SuspendExecution nor is annotated), so never instrumented. */
    private static void plainSleep() {
        try {
            Fiber.sleep(1);
        } catch (SuspendExecution | InterruptedException e) {
            // An instrumented caller would never see SuspendExecution; this frame is the bug under test.
        }
    }

    /** Heads on the wire, byte for byte, where Jetty alone would differ (see {@link ContractHead}, {@link Responses}). */
    @Test
    void headsOnTheWireAreTheContracts() throws IOException {
        String plain = "Server: kiln\r\nDate: D\r\nContent-Type: text/plain; charset=UTF-8\r\n";
        assertEquals("HTTP/1.1 200 OK\r\n" + plain + "Content-Length: 13\r\nConnection: keep-alive\r\n\r\nHello, World!",
            RawHttp.exchange(server.port(), "GET /plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        assertEquals("HTTP/1.1 200 OK\r\n" + plain + "Content-Length: 13\r\nConnection: close\r\n\r\nHello, World!",
            RawHttp.exchange(server.port(), "GET /plaintext HTTP/1.0\r\n\r\n"));
        assertEquals("HTTP/1.1 405 Method Not Allowed\r\n" + plain + "Allow: GET, HEAD, OPTIONS\r\nContent-Length: 58\r\nConnection: close\r\n\r\n"
                + "405 Method Not Allowed: POST is not allowed on /plaintext\n",
            RawHttp.exchange(server.port(), "POST /plaintext HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
        String garbage = RawHttp.exchange(server.port(), "GARBAGE\r\n\r\n");
        assertTrue(garbage.startsWith("HTTP/1.1 400 Bad Request\r\n" + plain + "Content-Length: "), garbage);
        assertTrue(garbage.contains("\r\nConnection: close\r\n\r\n400 Bad Request"), garbage);
        assertTrue(RawHttp.exchange(server.port(), "GET /plaintext HTTP/1.x\r\nHost: x\r\n\r\n")
            .startsWith("HTTP/1.1 400 Bad Request\r\n"), "a malformed version is 400, where Jetty alone says 505");
    }

    private static void assertInstrumented(Method m) {
        assertTrue(SuspendableHelper.isInstrumented(m), () -> "not instrumented by Quasar: " + m);
    }

    /** Writes to the real stderr and to a buffer the tests inspect. */
    private static final class Tee extends OutputStream {
        private final OutputStream a;
        private final OutputStream b;

        Tee(OutputStream a, OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public synchronized void write(int c) throws IOException {
            a.write(c);
            b.write(c);
        }

        @Override
        public synchronized void write(byte[] bytes, int off, int len) throws IOException {
            a.write(bytes, off, len);
            b.write(bytes, off, len);
        }

        @Override
        public synchronized void flush() throws IOException {
            a.flush();
            b.flush();
        }
    }
}

package kiln.comsat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shipped jar, started the way a user starts it ({@code java <lmdb flags> -jar kiln-comsat.jar},
 * no agent flags): its manifest must start the repaired Quasar agent and open java.lang, and its
 * META-INF/suspendables must be the one that survived shading.
 * Run by failsafe after the jar is built; Quasar's verifyInstrumentation is switched on so that an
 * uninstrumented frame shows in the server's output.
 */
class ComsatJarIT {
    private static final Path JAR = Path.of(System.getProperty("kiln.comsat.jar", "target/kiln-comsat.jar"));
    private static final List<String> LMDB_FLAGS = List.of(
        "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED");
    private static final Pattern READY = Pattern.compile("kiln-comsat listening on http://127\\.0\\.0\\.1:(\\d+)/");

    @TempDir
    Path data;

    @Test
    void jarServesThroughInstrumentedFibersAndStopsCleanly() throws Exception {
        assertTrue(Files.isRegularFile(JAR), JAR + " is built by the package phase");
        List<String> cmd = new ArrayList<>(List.of(javaOf(Path.of(System.getProperty("java.home"))), "-Xms64m", "-Xmx256m"));
        cmd.addAll(LMDB_FLAGS);
        cmd.addAll(List.of("-Dco.paralleluniverse.fibers.verifyInstrumentation=true", "-jar", JAR.toString(),
            "--port", "0", "--bind", "127.0.0.1", "--data", data.toString(), "--threads", "2"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        StringBuffer output = new StringBuffer();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Thread drain = drain(p.getInputStream(), output, port);
        try {
            int serving = port.get(60, TimeUnit.SECONDS);
            for (int i = 0; i < 3; i++) {
                assertOk(serving, "/hello?delay=20");
                assertOk(serving, "/updates?queries=2");
                assertOk(serving, "/db");
            }
        } finally {
            p.destroy();  // SIGTERM: the contract's graceful stop
            assertTrue(p.waitFor(20, TimeUnit.SECONDS), () -> "no exit within 20 s of SIGTERM:\n" + output);
            drain.join(5_000);
        }
        assertEquals(0, p.exitValue(), () -> "exit status after SIGTERM:\n" + output);
        Matcher complaint = FiberInstrumentationTest.QUASAR_COMPLAINT.matcher(output);
        assertFalse(complaint.find(), () -> "Quasar reported '" + complaint.group() + "':\n" + output);
    }

    /** JDK 19+ cannot run Quasar: the server says so and names a JDK 17, instead of hanging. */
    @Test
    void aNewerJdkIsRefusedWithTheJdk17ToUse() throws Exception {
        Path newer = firstJdk(Path.of("/usr/lib/jvm"), 19);
        assumeTrue(newer != null, "no JDK 19 or later in /usr/lib/jvm to try");
        List<String> cmd = new ArrayList<>(List.of(javaOf(newer)));
        cmd.addAll(LMDB_FLAGS);
        cmd.addAll(List.of("-jar", JAR.toString(), "--port", "0", "--bind", "127.0.0.1", "--data", data.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), output);
        assertEquals(1, p.exitValue(), output);
        assertTrue(output.contains("kiln-comsat: error: kiln-comsat runs only on JDK 17"), output);
        for (Path jdk17 : Preflight.jdk17s(Path.of("/usr/lib/jvm"))) {
            assertTrue(output.contains(jdk17.resolve("bin").resolve("java").toString()), () -> "names " + jdk17 + ":\n" + output);
        }
        assertFalse(output.contains("listening on"), output);
    }

    private static void assertOk(int port, String target) throws IOException {
        String r = RawHttp.exchange(port, "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assertTrue(r.startsWith("HTTP/1.1 200 OK\r\n"), () -> target + ":\n" + r);
    }

    private static String javaOf(Path home) {
        return home.resolve("bin").resolve("java").toString();
    }

    /** @return a JDK directly under {@code dir} whose release file says feature version {@code >= min}, or null */
    private static Path firstJdk(Path dir, int min) throws IOException {
        if (!Files.isDirectory(dir)) return null;
        Pattern version = Pattern.compile("JAVA_VERSION=\"(\\d+)");
        try (DirectoryStream<Path> jdks = Files.newDirectoryStream(dir)) {
            for (Path jdk : jdks) {
                Path release = jdk.resolve("release");
                if (!Files.isRegularFile(release) || !Files.isExecutable(jdk.resolve("bin").resolve("java"))) continue;
                Matcher m = version.matcher(Files.readString(release));
                if (m.find() && Integer.parseInt(m.group(1)) >= min) return jdk;
            }
        }
        return null;
    }

    private static Thread drain(InputStream in, StringBuffer output, CompletableFuture<Integer> port) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    output.append(line).append('\n');
                    Matcher m = READY.matcher(line);
                    if (m.matches()) port.complete(Integer.parseInt(m.group(1)));
                }
            } catch (IOException e) {
                output.append("(reading the server's output failed: ").append(e).append(")\n");
            } finally {
                port.completeExceptionally(new AssertionError("the server exited before its ready line:\n" + output));
            }
        }, "comsat-output");
        t.setDaemon(true);
        t.start();
        return t;
    }
}

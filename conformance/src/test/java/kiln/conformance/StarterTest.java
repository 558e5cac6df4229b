package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A user's app outside kiln's tree, the README's way: {@code make new-app DIR=...} in a temporary
 * directory outside the checkout, {@code mvn package} there offline against the artifacts that
 * {@code mvn install} put in the local repository (this suite runs in {@code make test}'s
 * {@code mvn install}, after every module it needs was installed), then the jar started as
 * {@code make run} starts it, and a 200 from its routes, a durable write among them.
 */
class StarterTest {
    private static final Pattern READY = Pattern.compile(" listening on http://127\\.0\\.0\\.1:(\\d+)/");

    @TempDir Path outside;

    @ParameterizedTest(name = "make new-app KIND={0}: builds offline against the installed kiln and serves")
    @ValueSource(strings = {"kilim", "loom"})
    void aNewAppBuildsOutsideTheTreeAndServes(String kind) throws Exception {
        assertFalse(outside.toAbsolutePath().startsWith(Dirs.repo()), "the app must live outside the checkout: " + outside);
        Path app = outside.resolve("my-app");
        Command created = Command.run(60, List.of("make", "-s", "-C", Dirs.repo().toString(), "new-app", "DIR=" + app, "KIND=" + kind));
        assertEquals(0, created.exitCode, created.output);
        assertFalse(created.output.contains("not in"), "kiln's artifacts are installed: " + created.output);

        List<String> mvn = new ArrayList<>(List.of("mvn", "-B", "-q", "-o", "-f", app.resolve("pom.xml").toString(), "package"));
        String localRepo = System.getProperty("kiln.localRepository");
        if (localRepo != null && !localRepo.isEmpty()) mvn.add("-Dmaven.repo.local=" + localRepo);
        Command built = Command.run(300, mvn);
        assertEquals(0, built.exitCode, "mvn package of the new app:\n" + built.output);
        Path jar = app.resolve("target/my-app.jar");
        assertTrue(Files.isRegularFile(jar), "no " + jar);

        // The same java as the front end of that kind runs on (loom: a JDK 21+), flags as `make run` gives them
        String java = FrontEnd.byId(kind).javaBinary();
        assertTrue(Files.isRegularFile(app.resolve("jvm.options")) && Files.isExecutable(app.resolve("find-java.sh")),
            "the app has its own jvm.options and JDK lookup");
        Command found = Command.run(30, List.of(app.resolve("find-java.sh").toString(), kind.equals("loom") ? "21+" : "17+"));
        assertEquals(0, found.exitCode, "the app's own JDK lookup finds one: " + found.output);
        // make cluster JAR=my-app.jar prints a hint for the app, not the demo's (scripts/cluster.sh's is_kiln_demo)
        String isDemo = "source <(sed -n '/^is_kiln_demo()/,/^}/p' scripts/cluster.sh); if is_kiln_demo; then echo demo; else echo app; fi";
        Command ownJar = Command.run(30, List.of("bash", "-c", "cd " + Dirs.repo() + " && JAR=" + jar + " && " + isDemo));
        assertEquals("app", ownJar.output.strip(), ownJar.output);
        Command kilnJar = Command.run(30, List.of("bash", "-c", "cd " + Dirs.repo() + " && JAR=" + FrontEnd.byId("kilim").jarPath() + " && " + isDemo));
        assertEquals("demo", kilnJar.output.strip(), kilnJar.output);
        Command help = Command.run(60, List.of(java, "@" + app.resolve("jvm.options"), "-jar", jar.toString(), "--help"));
        assertEquals(0, help.exitCode, help.output);
        assertTrue(help.output.contains("my-app: counts hits per page") && help.output.contains("--greeting=TEXT")
            && help.output.contains("--port=N"), "--help describes the app and its own flags beside the server's:\n" + help.output);
        assertFalse(help.output.contains("--app=") || help.output.contains("demo"), "and nothing of kiln's demo:\n" + help.output);
        Process server = new ProcessBuilder(java, "@" + app.resolve("jvm.options"), "-Xmx128m", "-jar", jar.toString(),
            "--port", "0", "--bind", "127.0.0.1", "--data", outside.resolve("data").toString(), "--greeting", "Hi from my-app")
            .redirectErrorStream(true).start();
        try {
            StringBuilder log = new StringBuilder();
            int port = awaitReady(server, log);
            HttpResponse<String> hello = get(port, "GET", "/hello");
            assertEquals(200, hello.statusCode(), hello::body);
            assertEquals("Hi from my-app\n", hello.body(), "the app's own flag reached its routes");
            HttpResponse<String> hit = get(port, "POST", "/hits/home");
            assertEquals(200, hit.statusCode(), hit::body);
            assertEquals("{\"page\":\"home\",\"hits\":1}", hit.body(), "a durable write through the app's route");
            assertEquals(404, get(port, "GET", "/hits/elsewhere").statusCode());
            HttpResponse<String> health = get(port, "GET", "/healthz");
            assertEquals(200, health.statusCode(), health::body);
            assertEquals("ok", health.body());
            HttpResponse<String> metrics = get(port, "GET", "/metrics");
            assertEquals(200, metrics.statusCode(), metrics::body);
            assertTrue(metrics.body().contains("http_requests_total{") && metrics.body().contains("kiln_db_commits"),
                "the app's routes and its database in the scrape:\n" + metrics.body());
            synchronized (log) {
                assertFalse(log.toString().contains("has held carrier thread"),
                    "a new app's first request of each route warns of no blocked carrier:\n" + log);
            }
        } finally {
            server.destroy();
            if (!server.waitFor(15, TimeUnit.SECONDS)) server.destroyForcibly();
        }
        assertEquals(0, server.exitValue(), "SIGTERM stops the app cleanly");
    }

    /** @return the port of the app's ready line, read within 60 s; the rest of its output is drained into {@code log} */
    private static int awaitReady(Process server, StringBuilder log) throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = out.readLine()) != null;) {
                    synchronized (log) {
                        log.append(line).append('\n');
                    }
                    Matcher m = READY.matcher(line);
                    if (m.find()) port.complete(Integer.parseInt(m.group(1)));
                }
            } catch (IOException e) {
                port.completeExceptionally(e);
            }
            port.completeExceptionally(new AssertionError("the app exited before it was ready"));
        }, "starter-app-output");
        reader.setDaemon(true);
        reader.start();
        try {
            return port.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            synchronized (log) {
                throw new AssertionError("the app did not print its ready line: " + e + "\n" + log, e);
            }
        }
    }

    private static HttpResponse<String> get(int port, String method, String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10))
            .method(method, HttpRequest.BodyPublishers.noBody()).build();
        return Contract.CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
    }
}

package kiln.kilim.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import kiln.kilim.KilimServer;
import kiln.kilim.example.TodoApp.Todo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's todo example: its text matches the compiled source, its REST API works, and it is durable. */
class TodoAppTest {
    private static final String SOURCE = "examples-kilim/src/main/java/kiln/kilim/example/TodoApp.java";
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir Path dir;

    @Test
    void readmeShowsTheExampleExactlyAsCompiled() throws IOException {
        ReadmeExample.assertInReadme(SOURCE);
    }

    private HttpResponse<String> send(String method, String url, String body) throws Exception {
        HttpRequest.BodyPublisher content = body == null ? BodyPublishers.noBody() : BodyPublishers.ofString(body);
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).method(method, content).build(),
            BodyHandlers.ofString());
    }

    @Test
    void theRestApiAddsListsUpdatesCountsAndDeletes() throws Exception {
        try (Db db = Db.open(dir)) {
            KilimServer server = new KilimServer("127.0.0.1", 0, 2, TodoApp.routes(db));
            server.start();
            try {
                String todos = "http://127.0.0.1:" + server.port() + "/todos";
                HttpResponse<String> added = send("POST", todos, "{\"title\":\"milk\"}");
                assertEquals(201, added.statusCode(), added::body);
                assertEquals("/todos/1", added.headers().firstValue("Location").orElse(null));
                assertEquals("{\"id\":1,\"title\":\"milk\",\"done\":false}", added.body());
                assertEquals(201, send("POST", todos, "{\"title\":\"bread\"}").statusCode());
                assertEquals("{\"open\":2}", send("GET", todos + "/open", null).body());

                HttpResponse<String> done = send("PUT", todos + "/1", "{\"done\":true}");
                assertEquals(200, done.statusCode(), done::body);
                assertEquals("{\"id\":1,\"title\":\"milk\",\"done\":true}", done.body());
                assertEquals("{\"open\":1}", send("GET", todos + "/open", null).body());
                JsonNode all = JSON.readTree(send("GET", todos, null).body());
                assertEquals(2, all.size());
                assertEquals("bread", JSON.readTree(send("GET", todos + "/2", null).body()).get("title").asText());

                HttpResponse<String> head = send("HEAD", todos + "/2", null);
                assertEquals(200, head.statusCode());
                assertEquals("", head.body(), "HEAD: the GET head, no body");
                HttpResponse<String> deleted = send("DELETE", todos + "/2", null);
                assertEquals(204, deleted.statusCode(), deleted::body);
                assertEquals("", deleted.body());
                assertTrue(deleted.headers().firstValue("Content-Length").isEmpty(), "a 204 has no Content-Length: " + deleted.headers());
                assertEquals(404, send("GET", todos + "/2", null).statusCode());
                assertEquals(404, send("DELETE", todos + "/2", null).statusCode());
                assertEquals(404, send("GET", todos + "/abc", null).statusCode());

                HttpResponse<String> malformed = send("POST", todos, "{\"title\":");
                assertEquals(400, malformed.statusCode());
                assertTrue(malformed.body().startsWith("400 Bad Request: malformed JSON at line 1, column 10"), malformed.body());
                HttpResponse<String> colour = send("POST", todos, "{\"title\":\"milk\",\"colour\":\"red\"}");
                assertEquals("400 Bad Request: unknown field 'colour' (known fields: done, id, title)\n", colour.body());
                HttpResponse<String> notABoolean = client.send(HttpRequest.newBuilder(URI.create(todos + "/1"))
                    .header("Accept", "application/json").PUT(BodyPublishers.ofString("{\"done\":\"yes\"}")).build(), BodyHandlers.ofString());
                assertEquals(400, notABoolean.statusCode());
                assertEquals("application/problem+json", notABoolean.headers().firstValue("Content-Type").orElse(null));
                assertEquals("{\"type\":\"about:blank\",\"title\":\"Bad Request\",\"status\":400,"
                    + "\"detail\":\"field 'done' must be true or false, got a string\"}", notABoolean.body());
                assertEquals(400, send("POST", todos, "{\"title\":\"  \"}").statusCode());
                HttpResponse<String> form = client.send(HttpRequest.newBuilder(URI.create(todos))
                    .header("Content-Type", "application/x-www-form-urlencoded").POST(BodyPublishers.ofString("{\"title\":\"x\"}")).build(),
                    BodyHandlers.ofString());
                assertEquals(415, form.statusCode(), "what curl -d and an HTML form send: " + form.body());
                assertTrue(form.body().startsWith("415 Unsupported Media Type: the content must be JSON"), form.body());
                assertEquals(413, send("POST", todos, "{\"title\":\"" + "x".repeat(70_000) + "\"}").statusCode());
                HttpResponse<String> patch = send("PATCH", todos + "/1", "{}");
                assertEquals(405, patch.statusCode());
                assertEquals("GET, HEAD, PUT, DELETE, OPTIONS", patch.headers().firstValue("Allow").orElse(null));
                HttpResponse<String> eggs = send("POST", todos, "{\"title\":\"eggs\"}");
                assertEquals("/todos/3", eggs.headers().firstValue("Location").orElse(null), "ids are not reused after a delete");
            } finally {
                server.stop(1_000);
            }
        }
    }

    /** Every add the client saw acknowledged (201) is in the database after a SIGKILL in the middle of adds. */
    @Test
    void acknowledgedAddsSurviveKill9() throws Exception {
        Path data = dir.resolve("data");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), TodoApp.class.getName(),
            "--port", "0", "--bind", "127.0.0.1", "--data", data.toString()));
        Process app = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        Map<Long, String> acknowledged = new ConcurrentHashMap<>();
        try {
            int port = readyPort(app);
            String todos = "http://127.0.0.1:" + port + "/todos";
            AtomicBoolean killed = new AtomicBoolean();
            ExecutorService clients = Executors.newFixedThreadPool(8);
            for (int c = 0; c < 8; c++) {
                int client = c;
                clients.execute(() -> {
                    for (int i = 0; !killed.get() && i < 10_000; i++) {
                        String title = "c" + client + "-" + i;
                        try {
                            HttpResponse<String> r = send("POST", todos, "{\"title\":\"" + title + "\"}");
                            if (r.statusCode() == 201) acknowledged.put(JSON.readTree(r.body()).get("id").asLong(), title);
                        } catch (Exception e) {
                            return;  // the server is gone
                        }
                    }
                });
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (acknowledged.size() < 200 && System.nanoTime() < deadline) Thread.sleep(5);
            app.destroyForcibly();  // SIGKILL while adds are in flight
            killed.set(true);
            clients.shutdown();
            assertTrue(clients.awaitTermination(30, TimeUnit.SECONDS));
            assertTrue(app.waitFor(30, TimeUnit.SECONDS));
            assertTrue(acknowledged.size() >= 200, "only " + acknowledged.size() + " adds acknowledged in 30 s");
        } finally {
            app.destroyForcibly();
        }
        try (Db db = Db.open(data)) {
            Table<Long, Todo> table = db.table("todos", Codec.LONG, Codec.json(Todo.class));
            List<String> lost = new ArrayList<>();
            db.read(txn -> {
                acknowledged.forEach((id, title) -> {
                    Todo t = table.get(txn, id);
                    if (t == null || !t.title.equals(title)) lost.add(id + "=" + title);
                });
                return null;
            }).join();
            assertEquals(List.of(), lost, "acknowledged adds missing after kill -9 (of " + acknowledged.size() + ")");
        }
    }

    private static int readyPort(Process app) throws IOException {
        Pattern ready = Pattern.compile("todo listening on http://127\\.0\\.0\\.1:(\\d+)/");
        BufferedReader out = new BufferedReader(new InputStreamReader(app.getInputStream(), StandardCharsets.UTF_8));
        StringBuilder seen = new StringBuilder();
        for (String line; (line = out.readLine()) != null; ) {
            seen.append(line).append('\n');
            Matcher m = ready.matcher(line);
            if (m.find()) {
                Thread drain = new Thread(() -> {
                    try {
                        while (out.readLine() != null) {
                            // keep the pipe flowing; the app's log is not needed
                        }
                    } catch (IOException ignored) {
                        // the app was killed
                    }
                });
                drain.setDaemon(true);
                drain.start();
                return Integer.parseInt(m.group(1));
            }
        }
        throw new AssertionError("the todo app did not start:\n" + seen);
    }
}

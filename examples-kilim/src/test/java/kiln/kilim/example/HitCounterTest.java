package kiln.kilim.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Path;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Db;
import kiln.kilim.KilimServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's handler example: its text matches the compiled source, and it works. */
class HitCounterTest {
    @Test
    void readmeShowsTheExampleExactlyAsCompiled() throws IOException {
        ReadmeExample.assertInReadme("examples-kilim/src/main/java/kiln/kilim/example/HitCounter.java");
    }

    @Test
    void hitsAreCountedDurablyPerPage(@TempDir Path dir) throws Exception {
        HttpClient client = HttpClient.newHttpClient();
        ObjectMapper json = new ObjectMapper();
        try (Db db = Db.open(dir)) {
            KilimServer server = new KilimServer("127.0.0.1", 0, 2, HitCounter.routes(db));
            server.start();
            try {
                String base = "http://127.0.0.1:" + server.port();
                for (int i = 1; i <= 3; i++) {
                    var r = client.send(java.net.http.HttpRequest.newBuilder(URI.create(base + "/hits?page=home")).build(), BodyHandlers.ofString());
                    assertEquals(200, r.statusCode());
                    JsonNode body = json.readTree(r.body());
                    assertEquals(i, body.get("hits").asLong());
                    assertEquals("home", body.get("page").asText());
                }
                var missing = client.send(java.net.http.HttpRequest.newBuilder(URI.create(base + "/hits")).build(), BodyHandlers.ofString());
                assertEquals(400, missing.statusCode());
                var post = client.send(java.net.http.HttpRequest.newBuilder(URI.create(base + "/hits?page=a"))
                    .POST(BodyPublishers.ofString("x")).build(), BodyHandlers.ofString());
                assertEquals(405, post.statusCode());
                assertEquals("GET, HEAD, OPTIONS", post.headers().firstValue("Allow").orElse(""));
            } finally {
                server.stop(1_000);
            }
        }
        try (Db reopened = Db.open(dir)) {
            var hits = reopened.table("hits", kiln.db.Codec.STRING, kiln.db.Codec.LONG);
            assertEquals(3L, reopened.read(txn -> hits.get(txn, "home")).join());
        }
    }
}

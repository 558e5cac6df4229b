package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Db;
import kiln.demo.board.MessageBoard;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The message board example (kiln.demo.board, written once as steps) through HTTP on Kilim fibers: a unique e-mail (409), sessions that expire (401), pages
 * newest first with continuations (400 when forged), a room's count and last time, a user's
 * messages by index, and a room's events, resumable with Last-Event-ID and only its own.
 */
class MessageBoardTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir Path dir;

    /** @param headers more request header fields: name, value, ... */
    private HttpResponse<String> send(String method, String url, String body, String token, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
            .method(method, body == null ? BodyPublishers.noBody() : BodyPublishers.ofString(body));
        if (token != null) b.header("Authorization", "Bearer " + token);
        for (int i = 0; i < headers.length; i += 2) b.header(headers[i], headers[i + 1]);
        return client.send(b.build(), BodyHandlers.ofString());
    }

    private String signIn(String base, String email) throws Exception {
        HttpResponse<String> r = send("POST", base + "/sessions", "{\"email\":\"" + email + "\"}", null);
        assertEquals(201, r.statusCode(), r::body);
        return JSON.readTree(r.body()).get("token").asText();
    }

    private long post(String base, String room, String text, String token) throws Exception {
        HttpResponse<String> r = send("POST", base + "/rooms/" + room + "/messages", "{\"text\":\"" + text + "\"}", token);
        assertEquals(201, r.statusCode(), r::body);
        return JSON.readTree(r.body()).get("id").asLong();
    }

    /** @return the texts of every page of {@code url}, following "next", and the number of pages */
    private List<String> allPages(String url, int[] pages) throws Exception {
        List<String> texts = new ArrayList<>();
        String next = null;
        do {
            HttpResponse<String> r = send("GET", url + (next == null ? "" : "&after=" + next), null, null);
            assertEquals(200, r.statusCode(), r::body);
            JsonNode page = JSON.readTree(r.body());
            for (JsonNode m : page.get("messages")) texts.add(m.get("text").asText());
            next = page.get("next").isNull() ? null : page.get("next").asText();
            pages[0]++;
        } while (next != null);
        return texts;
    }

    /** A server-sent event stream read on a thread of its own: its events' id and data lines, in order. */
    private static final class Events implements AutoCloseable {
        final BlockingQueue<String[]> events = new LinkedBlockingQueue<>();
        private final java.net.Socket socket;

        Events(int port, String path, String lastEventId) throws Exception {
            socket = new java.net.Socket("127.0.0.1", port);
            String request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                + (lastEventId == null ? "" : "Last-Event-ID: " + lastEventId + "\r\n") + "\r\n";
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            Thread reader = new Thread(() -> {
                try (BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                    String id = null;
                    for (String line; (line = lines.readLine()) != null; ) {
                        if (line.startsWith("id: ")) id = line.substring(4);
                        if (line.startsWith("data: ")) events.add(new String[] {id, line.substring(6)});
                    }
                } catch (java.io.IOException ignored) {
                    // closed
                }
            });
            reader.setDaemon(true);
            reader.start();
        }

        String[] next() throws InterruptedException {
            String[] e = events.poll(10, TimeUnit.SECONDS);
            assertNotNull(e, "an event within 10 s");
            return e;
        }

        @Override
        public void close() throws Exception {
            socket.close();
        }
    }

    @Test
    void theBoardKeepsUsersSessionsRoomsPagesIndexesAndEvents() throws Exception {
        try (Db db = Db.open(dir)) {
            KilimServer server = new KilimServer("127.0.0.1", 0, 2, MessageBoard.addTo(new Router(), db));
            server.start();
            try (Events lobbyEvents = new Events(server.port(), "/rooms/lobby/events", null)) {
                String base = "http://127.0.0.1:" + server.port();
                assertEquals(201, send("POST", base + "/users", "{\"name\":\"ada\",\"email\":\"ada@example.org\"}", null).statusCode());
                assertEquals(201, send("POST", base + "/users", "{\"name\":\"bob\",\"email\":\"bob@example.org\"}", null).statusCode());
                HttpResponse<String> taken = send("POST", base + "/users", "{\"name\":\"eve\",\"email\":\"ada@example.org\"}", null);
                assertEquals(409, taken.statusCode(), taken::body);
                assertTrue(taken.body().contains("'ada@example.org' is already taken") && !taken.body().contains("by-email"), taken.body());
                assertEquals(404, send("POST", base + "/sessions", "{\"email\":\"nobody@example.org\"}", null).statusCode());
                String ada = signIn(base, "ada@example.org");
                String bob = signIn(base, "bob@example.org");
                assertEquals(401, send("POST", base + "/rooms/lobby/messages", "{\"text\":\"anonymous\"}", null).statusCode());
                assertEquals(401, send("POST", base + "/rooms/lobby/messages", "{\"text\":\"forged\"}", "not-a-session").statusCode());

                for (int i = 1; i <= 25; i++) post(base, "lobby", "ada " + i, ada);
                for (int i = 1; i <= 3; i++) post(base, "attic", "bob up " + i, bob);
                post(base, "lobby", "bob 1", bob);
                post(base, "lobby", "bob 2", bob);

                // a room's pages, newest first
                int[] pages = {0};
                List<String> lobby = allPages(base + "/rooms/lobby/messages?limit=10", pages);
                assertEquals(27, lobby.size());
                assertEquals(List.of("bob 2", "bob 1", "ada 25"), lobby.subList(0, 3));
                assertEquals("ada 1", lobby.get(26));
                assertEquals(3, pages[0]);
                HttpResponse<String> forged = send("GET", base + "/rooms/lobby/messages?after=AAAA", null, null);
                assertEquals(400, forged.statusCode(), forged::body);
                String atticToken = JSON.readTree(send("GET", base + "/rooms/attic/messages?limit=1", null, null).body()).get("next").asText();
                assertEquals(400, send("GET", base + "/rooms/lobby/messages?after=" + atticToken, null, null).statusCode(),
                    "another room's continuation");

                // a room's count and last time
                JsonNode room = JSON.readTree(send("GET", base + "/rooms/lobby", null, null).body());
                assertEquals(27, room.get("messages").asLong());
                assertTrue(room.get("lastAt").asLong() > 0);
                assertTrue(JSON.readTree(send("GET", base + "/rooms/cellar", null, null).body()).get("lastAt").isNull());

                // a user's messages, by the author index, newest first across rooms
                pages[0] = 0;
                assertEquals(List.of("bob 2", "bob 1", "bob up 3", "bob up 2", "bob up 1"), allPages(base + "/users/bob/messages?limit=2", pages));
                assertEquals(3, pages[0]);

                // the lobby's events: its 27 messages in order, none of the attic's
                List<String[]> seen = new ArrayList<>();
                for (int i = 0; i < 27; i++) seen.add(lobbyEvents.next());
                assertEquals("ada 1", JSON.readTree(seen.get(0)[1]).get("text").asText());
                assertEquals("bob 2", JSON.readTree(seen.get(26)[1]).get("text").asText());
                for (String[] e : seen) assertEquals("lobby", JSON.readTree(e[1]).get("room").asText());
                // a subscriber back with the 20th event's id gets the 21st on, as the first one did
                try (Events resumed = new Events(server.port(), "/rooms/lobby/events", seen.get(19)[0])) {
                    for (int i = 20; i < 27; i++) assertEquals(seen.get(i)[1], resumed.next()[1]);
                }
                assertNull(lobbyEvents.events.poll(200, TimeUnit.MILLISECONDS), "no event of another room");
            } finally {
                server.stop(1_000);
            }
        }
    }

    @Test
    void aSessionExpires() throws Exception {
        try (Db db = Db.open(dir)) {
            KilimServer server = new KilimServer("127.0.0.1", 0, 2, MessageBoard.addTo(new Router(), db, Duration.ofMillis(300)));
            server.start();
            try {
                String base = "http://127.0.0.1:" + server.port();
                assertEquals(201, send("POST", base + "/users", "{\"name\":\"ada\",\"email\":\"ada@example.org\"}", null).statusCode());
                String ada = signIn(base, "ada@example.org");
                post(base, "lobby", "while signed in", ada);
                Thread.sleep(600);
                HttpResponse<String> after = send("POST", base + "/rooms/lobby/messages", "{\"text\":\"too late\"}", ada);
                assertEquals(401, after.statusCode(), after::body);
            } finally {
                server.stop(1_000);
            }
        }
    }

    /**
     * A post with an Idempotency-Key is safe to retry: the same key again (the same user's) gets the
     * first answer and posts nothing; the key with another post is 422; another user's same key is
     * theirs; without the header every post posts.
     */
    @Test
    void aRetryWithItsIdempotencyKeyPostsOnce() throws Exception {
        try (Db db = Db.open(dir)) {
            KilimServer server = new KilimServer("127.0.0.1", 0, 2, MessageBoard.addTo(new Router(), db));
            server.start();
            try {
                String base = "http://127.0.0.1:" + server.port();
                assertEquals(201, send("POST", base + "/users", "{\"name\":\"ada\",\"email\":\"ada@example.org\"}", null).statusCode());
                assertEquals(201, send("POST", base + "/users", "{\"name\":\"bob\",\"email\":\"bob@example.org\"}", null).statusCode());
                String ada = signIn(base, "ada@example.org");
                String bob = signIn(base, "bob@example.org");
                String lobby = base + "/rooms/lobby/messages";
                String key = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"";   // the draft's form: a quoted string

                HttpResponse<String> first = send("POST", lobby, "{\"text\":\"once\"}", ada, "Idempotency-Key", key);
                assertEquals(201, first.statusCode(), first::body);
                HttpResponse<String> retry = send("POST", lobby, "{\"text\":\"once\"}", ada, "Idempotency-Key", key);
                assertEquals(201, retry.statusCode(), retry::body);
                assertEquals(JSON.readTree(first.body()), JSON.readTree(retry.body()), "the retry is answered what the first was");
                assertEquals(first.headers().firstValue("Location"), retry.headers().firstValue("Location"));
                assertEquals(1, JSON.readTree(send("GET", base + "/rooms/lobby", null, null).body()).get("messages").asLong(), "posted once");

                HttpResponse<String> other = send("POST", lobby, "{\"text\":\"another text\"}", ada, "Idempotency-Key", key);
                assertEquals(422, other.statusCode(), other::body);
                assertTrue(other.body().contains("was used for another request"), other.body());
                assertEquals(422, send("POST", base + "/rooms/attic/messages", "{\"text\":\"once\"}", ada, "Idempotency-Key", key).statusCode(),
                    "the same text in another room is another post");
                HttpResponse<String> tooLong = send("POST", lobby, "{\"text\":\"x\"}", ada, "Idempotency-Key", "k".repeat(256));
                assertEquals(400, tooLong.statusCode(), tooLong::body);

                HttpResponse<String> bobs = send("POST", lobby, "{\"text\":\"once\"}", bob, "Idempotency-Key", key);
                assertEquals(201, bobs.statusCode(), bobs::body);
                assertTrue(JSON.readTree(bobs.body()).get("id").asLong() != JSON.readTree(first.body()).get("id").asLong(), "bob's key is not ada's");
                assertEquals("bob", JSON.readTree(bobs.body()).get("author").asText());

                long a = post(base, "lobby", "no key", ada);
                long b = post(base, "lobby", "no key", ada);
                assertTrue(a != b, "without the header each post posts");
                assertEquals(4, JSON.readTree(send("GET", base + "/rooms/lobby", null, null).body()).get("messages").asLong());
            } finally {
                server.stop(1_000);
            }
        }
    }

    /** The example's source is the model the issue asked for: no key encoded by hand, no count kept by hand, no feed filtered. */
    @Test
    void theSourceEncodesNoKeyKeepsNoCountAndFiltersNoFeed() throws Exception {
        String source = Files.readString(Path.of("../demo/src/main/java/kiln/demo/board/MessageBoard.java"));
        for (String handMade : new String[] {"String.format", "%019d", "ByteBuffer", "scanBackward", "feed.read(", "touches(", ".add(txn"}) {
            assertTrue(!source.contains(handMade), "the example uses " + handMade);
        }
        assertTrue(Pattern.compile("messages\\.count\\(txn, all\\)").matcher(source).find(), "the count is a range's");
    }
}

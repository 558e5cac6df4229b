package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The message board example ({@code --app board}, kiln.demo.board.MessageBoard) on every front end:
 * a request's JSON content reaches its handler and comes back in the answer, a request header
 * ({@code Authorization}, {@code Last-Event-ID}, {@code Idempotency-Key}) reaches its handler, and
 * a small walk (a user, a session, posts, pages, the room's event stream) answers the same everywhere.
 */
class BoardTest {
    @RegisterExtension
    static final Servers SERVERS = new Servers("BoardTest", "--app", "board").withQuietCarriers();

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    /** @param headers more request header fields: name, value, ... */
    private static HttpResponse<String> send(ServerProcess server, String method, String target, String json, String token,
                                             String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(target)).timeout(Duration.ofSeconds(10))
            .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) b.header("Content-Type", "application/json");
        if (token != null) b.header("Authorization", "Bearer " + token);
        for (int i = 0; i < headers.length; i += 2) b.header(headers[i], headers[i + 1]);
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Creates a user named {@code name} and signs in. @return the session's token */
    private static String signUp(ServerProcess server, String name) throws Exception {
        HttpResponse<String> user = send(server, "POST", "/users", "{\"name\":\"" + name + "\",\"email\":\"" + name + "@example.org\"}", null);
        assertEquals(201, user.statusCode(), user::body);
        HttpResponse<String> session = send(server, "POST", "/sessions", "{\"email\":\"" + name + "@example.org\"}", null);
        assertEquals(201, session.statusCode(), session::body);
        return JSON.readTree(session.body()).get("token").asText();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aJsonBodyComesBackInTheAnswer(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        String name = "body-" + System.nanoTime();
        HttpResponse<String> r = send(server, "POST", "/users", "{\"name\":\"" + name + "\",\"email\":\"" + name + "@example.org\"}", null);
        assertEquals(201, r.statusCode(), r::body);
        JsonNode user = JSON.readTree(r.body());
        assertEquals(name, user.get("name").asText(), "the content reached the handler");
        assertEquals(name + "@example.org", user.get("email").asText());
        HttpResponse<String> taken = send(server, "POST", "/users", "{\"name\":\"x\",\"email\":\"" + name + "@example.org\"}", null);
        assertEquals(409, taken.statusCode(), taken::body);
        HttpResponse<String> none = send(server, "POST", "/users", "{}", null);
        assertEquals(400, none.statusCode(), "a user needs a name: " + none.body());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aRequestHeaderReachesTheHandler(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        String token = signUp(server, "header-" + System.nanoTime());
        assertEquals(401, send(server, "POST", "/rooms/headers/messages", "{\"text\":\"anonymous\"}", null).statusCode());
        assertEquals(401, send(server, "POST", "/rooms/headers/messages", "{\"text\":\"forged\"}", "not-a-session").statusCode());
        HttpResponse<String> posted = send(server, "POST", "/rooms/headers/messages", "{\"text\":\"signed\"}", token);
        assertEquals(201, posted.statusCode(), posted::body);
        assertEquals("signed", JSON.readTree(posted.body()).get("text").asText());
    }

    /** The Idempotency-Key header reaches the handler: a retry is answered the first post, the key with another text 422. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void anIdempotencyKeyMakesARetrySafe(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        String token = signUp(server, "retrier-" + System.nanoTime());
        String room = "/rooms/retries" + System.nanoTime();
        String key = java.util.UUID.randomUUID().toString();
        HttpResponse<String> first = send(server, "POST", room + "/messages", "{\"text\":\"once\"}", token, "Idempotency-Key", key);
        assertEquals(201, first.statusCode(), first::body);
        HttpResponse<String> retry = send(server, "POST", room + "/messages", "{\"text\":\"once\"}", token, "Idempotency-Key", key);
        assertEquals(201, retry.statusCode(), retry::body);
        assertEquals(JSON.readTree(first.body()), JSON.readTree(retry.body()), "the retry is answered the first post");
        HttpResponse<String> other = send(server, "POST", room + "/messages", "{\"text\":\"twice\"}", token, "Idempotency-Key", key);
        assertEquals(422, other.statusCode(), other::body);
        assertEquals(1, JSON.readTree(send(server, "GET", room, null, null).body()).get("messages").asLong(), "posted once");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void theBoardWalkCreatesPostsPagesAndStreams(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        String room = "walk" + System.nanoTime();
        String token = signUp(server, "walker-" + System.nanoTime());
        try (RawConnection events = RawConnection.open(server)) {
            RawResponse head = events.send(RawConnection.get("/rooms/" + room + "/events")).readStreamHead();
            assertEquals(200, head.status, head.head);
            assertEquals("text/event-stream", head.header("Content-Type"));
            for (int i = 1; i <= 5; i++) {
                assertEquals(201, send(server, "POST", "/rooms/" + room + "/messages", "{\"text\":\"m" + i + "\"}", token).statusCode());
            }
            // pages of 2, newest first, following "next"
            List<String> texts = new ArrayList<>();
            String next = null;
            int pages = 0;
            do {
                HttpResponse<String> page = send(server, "GET", "/rooms/" + room + "/messages?limit=2" + (next == null ? "" : "&after=" + next), null, null);
                assertEquals(200, page.statusCode(), page::body);
                JsonNode body = JSON.readTree(page.body());
                for (JsonNode m : body.get("messages")) texts.add(m.get("text").asText());
                next = body.get("next").isNull() ? null : body.get("next").asText();
                pages++;
            } while (next != null);
            assertEquals(List.of("m5", "m4", "m3", "m2", "m1"), texts);
            assertEquals(3, pages);
            assertEquals(5, JSON.readTree(send(server, "GET", "/rooms/" + room, null, null).body()).get("messages").asLong());
            // the room's stream: its five messages in order
            StringBuilder stream = new StringBuilder();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!stream.toString().contains("\"m5\"") && System.nanoTime() < deadline) stream.append(events.readChunk());
            String text = stream.toString();
            int at = -1;
            for (int i = 1; i <= 5; i++) {
                int found = text.indexOf("\"text\":\"m" + i + "\"");
                assertTrue(found > at, "m" + i + " after m" + (i - 1) + " in: " + text);
                at = found;
            }
            // Last-Event-ID: a client back after the 3rd event gets the 4th and 5th
            String thirdId = text.split("id: ")[3].split("\n")[0];
            try (RawConnection resumed = RawConnection.open(server)) {
                RawResponse again = resumed.send("GET /rooms/" + room + "/events HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: " + thirdId + "\r\n\r\n")
                    .readStreamHead();
                assertEquals(200, again.status, again.head);
                StringBuilder rest = new StringBuilder();
                while (!rest.toString().contains("\"m5\"") && System.nanoTime() < deadline) rest.append(resumed.readChunk());
                assertTrue(rest.indexOf("\"m4\"") >= 0 && rest.indexOf("\"m3\"") < 0, "resumed after the 3rd: " + rest);
            }
        }
    }
}

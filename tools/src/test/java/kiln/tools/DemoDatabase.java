package kiln.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import kiln.db.Db;
import kiln.demo.DemoDb;
import kiln.demo.Endpoints;
import kiln.demo.board.MessageBoard;
import kiln.http.Response;
import kiln.server.AbstractRouter;
import kiln.server.Metrics;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;

/**
 * The demo's database as the demo makes it: its tables filled on first open ({@link DemoDb}), a few
 * {@code /updates} (the world feed's sets), and the message board's routes ({@code --app board}) used
 * as a client would: users (a sequence, a unique index), sessions (an expiring table), messages in
 * two rooms (a sequence, an index, a feed), one posted with an idempotency key (another expiring table).
 */
final class DemoDatabase {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final StepRouter demo;
    private final StepRouter board;

    /** Opens the demo's tables and the board's on {@code db}, filling the demo's if empty. */
    DemoDatabase(Db db) {
        this.demo = Endpoints.addTo(new StepRouter(Metrics.off()), DemoDb.open(db));
        this.board = MessageBoard.addTo(new StepRouter(Metrics.off()), db);
    }

    /** Fills it: 3 updates of 5 worlds, 3 users, 2 sessions, 5 messages (one with an idempotency key, sent twice). */
    void fill() {
        for (int i = 0; i < 3; i++) assertEquals(200, request(demo, "GET", "/updates", "queries=5", null, List.of()).status);
        for (String name : List.of("ada", "bob", "cy")) {
            assertEquals(201, request(board, "POST", "/users", null, "{\"name\":\"" + name + "\",\"email\":\"" + name + "@example.org\"}", List.of()).status);
        }
        String ada = token("ada@example.org");
        String bob = token("bob@example.org");
        post(ada, "lobby", "hello", null);
        post(bob, "lobby", "hi ada", null);
        post(ada, "kitchen", "tea?", null);
        post(bob, "kitchen", "yes", "7c1f0e2a-4b5d-4e6f-8a9b-0c1d2e3f4a5b");
        post(bob, "kitchen", "yes", "7c1f0e2a-4b5d-4e6f-8a9b-0c1d2e3f4a5b");  // the retry: nothing posted
        post(ada, "lobby", "bye", null);
    }

    /**
     * Writes a little more after a move: an update, a user whose e-mail is taken (refused: 409), a
     * new user and a message.
     */
    void more() {
        assertEquals(200, request(demo, "GET", "/updates", "queries=5", null, List.of()).status);
        assertEquals(409, request(board, "POST", "/users", null, "{\"name\":\"ada2\",\"email\":\"ada@example.org\"}", List.of()).status);
        assertEquals(201, request(board, "POST", "/users", null, "{\"name\":\"dee\",\"email\":\"dee@example.org\"}", List.of()).status);
        post(token("dee@example.org"), "lobby", "late", null);
    }

    private String token(String email) {
        Response r = request(board, "POST", "/sessions", null, "{\"email\":\"" + email + "\"}", List.of());
        assertEquals(201, r.status);
        return json(r).get("token").asText();
    }

    private void post(String token, String room, String text, String key) {
        List<String> headers = key == null ? List.of("authorization", "Bearer " + token)
            : List.of("authorization", "Bearer " + token, "idempotency-key", key);
        assertEquals(201, request(board, "POST", "/rooms/" + room + "/messages", null, "{\"text\":\"" + text + "\"}", headers).status);
    }

    /** @return GET {@code path}'s answer from the board: status and body */
    String board(String path, String query) {
        Response r = request(board, "GET", path, query, null, List.of());
        return r.status + " " + new String(r.body, StandardCharsets.UTF_8);
    }

    private static Response request(StepRouter router, String method, String path, String query, String json, List<String> headers) {
        List<String> all = new java.util.ArrayList<>(headers);
        byte[] body = new byte[0];
        if (json != null) {
            all.addAll(List.of("content-type", "application/json"));
            body = json.getBytes(StandardCharsets.UTF_8);
        }
        AbstractRouter.Exchange<StepHandler> exchange = router.begin(method, path, query, all, body, null);
        return exchange.respond(Step.runBlocking(StepRouter.firstStep(exchange)));
    }

    private static JsonNode json(Response r) {
        try {
            return JSON.readTree(r.body);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** @return what the board's GET answers, for comparing two copies of the database through the app */
    Map<String, String> answers() {
        return Map.of("lobby", board("/rooms/lobby/messages", "limit=2"), "kitchen", board("/rooms/kitchen", null),
            "ada", board("/users/ada/messages", null));
    }
}

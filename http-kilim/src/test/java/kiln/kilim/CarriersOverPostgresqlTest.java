package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Db;
import kiln.db.postgresql.PostgresServer;
import kiln.demo.AppOption;
import kiln.demo.Endpoint;
import kiln.demo.Endpoints;
import kiln.server.ServerOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/**
 * No kiln code blocks a carrier (issue 38): the Kilim front end serves the demo, then the message
 * board, from PostgreSQL as their jar does ({@link KilimMain#serve}, {@link KilimDemo#routes}), with
 * every database round trip held {@value #ROUND_TRIP_MS} ms by a {@link SlowLink}, so that one made
 * on a carrier holds it past the blocked-carrier checker's threshold ({@value #BLOCKED_MS} ms), where on the
 * loopback it would be over before the watch looked. Every endpoint is served and every event
 * stream followed, resumed with {@code Last-Event-ID} from the feed's log (a restart left this
 * server's memory without the sets) and from ahead of it; any report of the watch fails the test
 * with the handler and its stack, and so does any answer but the expected one (a {@code join()}
 * refused on a carrier answers 500).
 */
class CarriersOverPostgresqlTest {
    /** How long PostgreSQL's every answer takes to arrive, ms. */
    static final long ROUND_TRIP_MS = 150;
    /**
     * The blocked-carrier checker's report threshold, ms ({@code --blocked-carrier-ms}, its default): two thirds
     * of a round trip. At 50 ms the first {@code /metrics} scrape (30-55 ms of cold code here) was
     * reported once in two runs.
     */
    static final long BLOCKED_MS = 100;

    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    static final PostgresServer POSTGRES = new PostgresServer();
    private static SlowLink link;

    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    static void openLink() throws IOException {
        link = new SlowLink(POSTGRES.port);
    }

    @AfterAll
    static void closeLink() throws IOException {
        link.close();
    }

    /** A server as the Kilim jar runs it, over its database; stopping it closes both. */
    private record Served(Db db, KilimServer server) implements AutoCloseable {
        String base() {
            return "http://127.0.0.1:" + server.port();
        }

        @Override
        public void close() {
            server.stop(1_000);
            db.close();
        }
    }

    /**
     * @param schema the PostgreSQL schema of its tables: a second server on the same one finds what the first committed
     * @param more   more of the jar's options, e.g. {@code --app board}
     */
    private static Served serve(String schema, String... more) throws IOException {
        link.delay(Duration.ZERO);  // the set-up's round trips (the demo fills 10,000 rows, /cached-queries reads them) at full speed
        List<String> args = new ArrayList<>(List.of("--db", POSTGRES.url(link.port(), schema), "--bind", "127.0.0.1", "--port", "0",
            "--threads", "2", "--blocked-carrier-ms", Long.toString(BLOCKED_MS), "--db-deadline", "30000"));
        args.addAll(List.of(more));
        KilimMain command = new KilimMain();
        AppOption app = new AppOption();
        new CommandLine(command).addMixin("app", app).parseArgs(args.toArray(new String[0]));
        ServerOptions options = command.server;
        Db db = options.database().open();
        try {
            return new Served(db, command.serve(options, db, KilimDemo.routes(options, app)));
        } catch (IOException | RuntimeException e) {
            db.close();
            throw e;
        }
    }

    private HttpResponse<String> send(String method, String url, String body, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
            .method(method, body == null ? BodyPublishers.noBody() : BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) b.header(headers[i], headers[i + 1]);
        return client.send(b.build(), BodyHandlers.ofString());
    }

    private String get(String url, int status) throws Exception {
        HttpResponse<String> r = send("GET", url, null);
        assertEquals(status, r.statusCode(), () -> "GET " + url + ": " + r.body());
        return r.body();
    }

    /** Checks that the link holds the database's answers: a read through {@code url} takes a round trip at least. */
    private void assertSlow(String url) throws Exception {
        long start = System.nanoTime();
        get(url, 200);
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms >= ROUND_TRIP_MS, "GET " + url + " took " + ms + " ms: the link does not hold PostgreSQL's answers");
    }

    /** Waits a few of the watch's looks, then fails on anything it reported. */
    private static void assertNoCarrierHeld(WatchLog watch) throws InterruptedException {
        Thread.sleep(4 * BLOCKED_MS);
        assertEquals(List.of(), watch.messages, "the blocked-carrier checker reported a carrier held (each report names the handler and its stack)");
    }

    @Test
    void theDemoHoldsNoCarrierOverPostgresql() throws Exception {
        List<Integer> changed = new ArrayList<>();
        try (Served first = serve("demo")) {  // three commits in the feed's log, then a restart: memory keeps none of them
            for (int i = 0; i < 3; i++) changed.add(JSON.readTree(get(first.base() + "/updates?queries=1", 200)).get(0).get("id").asInt());
        }
        try (Served s = serve("demo"); WatchLog watch = WatchLog.start()) {
            link.delay(Duration.ofMillis(ROUND_TRIP_MS));
            assertSlow(s.base() + "/db");
            int port = s.server().port();
            try (Events live = new Events(port, "/updates/events", null);
                 Events resumed = new Events(port, "/updates/events", "0");
                 Events row = new Events(port, "/worlds/" + changed.get(2) + "/events", "2");
                 Events ahead = new Events(port, "/updates/events", "1000000")) {
                for (int seq = 1; seq <= 3; seq++) assertEquals(Long.toString(seq), resumed.next("update").id, "from the log");
                assertEquals("3", row.next("update").id, "the row's change, from the log");
                assertEquals("3", ahead.next("reload").id, "ahead of the log: reload from the newest");

                for (Endpoint e : Endpoints.ALL) {
                    if (e.path.endsWith("/events")) continue;  // the streams, above
                    get(s.base() + e.example, 200);
                }
                get(s.base() + "/worlds/10001", 404);
                JsonNode updated = JSON.readTree(get(s.base() + "/updates?queries=2", 200));
                assertEquals(2, updated.size());
                assertEquals("4", live.next("update").id, "a commit made now");
                assertEquals("4", resumed.next("update").id);
                assertEquals("4", ahead.next("update").id);
            }
            assertNoCarrierHeld(watch);
        }
    }

    @Test
    void theMessageBoardHoldsNoCarrierOverPostgresql() throws Exception {
        String ada;
        try (Served first = serve("board", "--app", "board")) {  // a user, a session and three messages in the log, then a restart
            String base = first.base();
            assertEquals(201, send("POST", base + "/users", "{\"name\":\"ada\",\"email\":\"ada@example.org\"}").statusCode());
            ada = token(send("POST", base + "/sessions", "{\"email\":\"ada@example.org\"}"));
            for (int i = 1; i <= 3; i++) {
                assertEquals(201, send("POST", base + "/rooms/lobby/messages", "{\"text\":\"before " + i + "\"}", "Authorization", "Bearer " + ada).statusCode());
            }
        }
        try (Served s = serve("board", "--app", "board"); WatchLog watch = WatchLog.start()) {
            link.delay(Duration.ofMillis(ROUND_TRIP_MS));
            String base = s.base();
            assertSlow(base + "/rooms/lobby");
            int port = s.server().port();
            try (Events live = new Events(port, "/rooms/lobby/events", null);
                 Events resumed = new Events(port, "/rooms/lobby/events", "0");
                 Events ahead = new Events(port, "/rooms/attic/events", "1000000")) {
                for (int i = 1; i <= 3; i++) assertTrue(resumed.next("message").data.contains("\"before " + i + "\""), "from the log");
                assertEquals("reload", ahead.next("reload").type, "ahead of the log: reload");

                assertEquals(201, send("POST", base + "/users", "{\"name\":\"bob\",\"email\":\"bob@example.org\"}").statusCode());
                assertEquals(409, send("POST", base + "/users", "{\"name\":\"eve\",\"email\":\"bob@example.org\"}").statusCode());
                String bob = token(send("POST", base + "/sessions", "{\"email\":\"bob@example.org\"}"));
                assertEquals(201, send("POST", base + "/rooms/lobby/messages", "{\"text\":\"now\"}", "Authorization", "Bearer " + bob).statusCode());
                assertEquals(201, send("POST", base + "/rooms/lobby/messages", "{\"text\":\"once\"}", "Authorization", "Bearer " + ada,
                    "Idempotency-Key", "\"k1\"").statusCode());
                assertEquals(201, send("POST", base + "/rooms/lobby/messages", "{\"text\":\"once\"}", "Authorization", "Bearer " + ada,
                    "Idempotency-Key", "\"k1\"").statusCode(), "the retry gets the stored message");
                assertEquals(401, send("POST", base + "/rooms/lobby/messages", "{\"text\":\"x\"}", "Authorization", "Bearer forged").statusCode());
                JsonNode page = JSON.readTree(get(base + "/rooms/lobby/messages?limit=2", 200));
                assertEquals("once", page.get("messages").get(0).get("text").asText());
                JsonNode next = JSON.readTree(get(base + "/rooms/lobby/messages?limit=2&after=" + page.get("next").asText(), 200));
                assertEquals(2, next.get("messages").size());
                get(base + "/rooms/lobby/messages?after=AAAA", 400);  // a forged continuation
                assertEquals(5, JSON.readTree(get(base + "/rooms/lobby", 200)).get("messages").asInt());
                assertEquals(4, JSON.readTree(get(base + "/users/ada/messages", 200)).get("messages").size());
                assertTrue(live.next("message").data.contains("\"now\""), "a commit made now");
                assertTrue(live.next("message").data.contains("\"once\""));
                assertTrue(resumed.next("message").data.contains("\"now\""));
            }
            assertNoCarrierHeld(watch);
        }
    }

    private static String token(HttpResponse<String> session) throws IOException {
        assertEquals(201, session.statusCode(), session::body);
        return JSON.readTree(session.body()).get("token").asText();
    }

    /** One server-sent event: its id, type ({@code message} when it has none) and data. */
    private record Event(String id, String type, String data) {
    }

    /** A server-sent event stream read on a thread of its own. */
    private static final class Events implements AutoCloseable {
        private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        private final Socket socket;

        Events(int port, String path, String lastEventId) throws IOException {
            socket = new Socket("127.0.0.1", port);
            String request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                + (lastEventId == null ? "" : "Last-Event-ID: " + lastEventId + "\r\n") + "\r\n";
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            BufferedReader lines = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            Thread reader = new Thread(() -> {
                try (lines) {
                    String id = null;
                    String type = "message";
                    StringBuilder data = null;
                    for (String line; (line = lines.readLine()) != null; ) {
                        if (line.startsWith("id: ")) id = line.substring(4);
                        else if (line.startsWith("event: ")) type = line.substring(7);
                        else if (line.startsWith("data: ")) data = (data == null ? new StringBuilder() : data.append('\n')).append(line.substring(6));
                        else if (line.isEmpty() && data != null) {
                            events.add(new Event(id, type, data.toString()));
                            type = "message";
                            data = null;
                        }
                    }
                } catch (IOException ignored) {
                    // closed
                }
            }, "events " + path);
            reader.setDaemon(true);
            reader.start();
        }

        /** @return the next event, which must be of {@code type} */
        Event next(String type) throws InterruptedException {
            Event e = events.poll(30, TimeUnit.SECONDS);
            assertNotNull(e, "an event within 30 s");
            assertEquals(type, e.type, e::toString);
            return e;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}

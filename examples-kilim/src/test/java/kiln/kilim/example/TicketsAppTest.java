package kiln.kilim.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URLEncoder;
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
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Db;
import kiln.kilim.KilimServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ticketing example over HTTP: pages from now with the database's token, no overselling, and one live stream of sales and holds. */
class TicketsAppTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir Path dir;
    Db db;
    KilimServer server;
    String base;

    @BeforeEach
    void start() throws Exception {
        db = Db.open(dir);
        server = new KilimServer("127.0.0.1", 0, 2, TicketsApp.routes(db));
        server.start();
        base = "http://127.0.0.1:" + server.port();
    }

    @AfterEach
    void stop() {
        server.stop(1_000);
        db.close();
    }

    private HttpResponse<String> send(String method, String target, String json) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + target)).timeout(Duration.ofSeconds(10))
            .method(method, json == null ? BodyPublishers.noBody() : BodyPublishers.ofString(json));
        if (json != null) b.header("Content-Type", "application/json");
        return client.send(b.build(), BodyHandlers.ofString());
    }

    private long event(String name, long startsAt, int seats) throws Exception {
        HttpResponse<String> r = send("POST", "/events", "{\"name\":\"" + name + "\",\"startsAt\":" + startsAt + ",\"seats\":" + seats + "}");
        assertEquals(201, r.statusCode(), r::body);
        return JSON.readTree(r.body()).get("id").asLong();
    }

    /** "Upcoming events" is a range from now, computed again at every request: its pages go on with the token as the database made it. */
    @Test
    void upcomingEventsPageFromNowWithTheDatabasesOwnToken() throws Exception {
        long now = System.currentTimeMillis();
        event("yesterday", now - 86_400_000, 10);
        for (int h = 1; h <= 5; h++) event("in " + h + " h", now + h * 3_600_000L, 10);
        List<String> names = new ArrayList<>();
        String after = null;
        int pages = 0;
        do {
            String target = "/events/upcoming?limit=2" + (after == null ? "" : "&after=" + URLEncoder.encode(after, StandardCharsets.UTF_8));
            Thread.sleep(5);  // "now" moves between requests, as it does for a person reading page after page
            HttpResponse<String> page = send("GET", target, null);
            assertEquals(200, page.statusCode(), page::body);
            JsonNode body = JSON.readTree(page.body());
            for (JsonNode e : body.get("events")) names.add(e.get("name").asText());
            after = body.get("next").isNull() ? null : body.get("next").asText();
            pages++;
        } while (after != null && pages < 10);
        assertEquals(List.of("in 1 h", "in 2 h", "in 3 h", "in 4 h", "in 5 h"), names, "every upcoming event once, in order; not yesterday's");
        assertEquals(3, pages);
        HttpResponse<String> forged = send("GET", "/events/upcoming?after=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", null);
        assertEquals(400, forged.statusCode(), "a forged token is still refused: " + forged.body());
    }

    /** 40 buyers at once for 10 seats: exactly 10 are sold, every other buyer is told it is sold out. */
    @Test
    void concurrentBuyersNeverOversell() throws Exception {
        long id = event("concert", System.currentTimeMillis() + 3_600_000, 10);
        ExecutorService buyers = Executors.newFixedThreadPool(8);
        try {
            List<Future<Integer>> statuses = new ArrayList<>();
            for (int i = 0; i < 40; i++) statuses.add(buyers.submit(() -> send("POST", "/events/" + id + "/tickets", "{\"seats\":1}").statusCode()));
            int created = 0;
            int conflicts = 0;
            for (Future<Integer> s : statuses) {
                int status = s.get(30, TimeUnit.SECONDS);
                if (status == 201) created++;
                else if (status == 409) conflicts++;
            }
            assertEquals(10, created);
            assertEquals(30, conflicts);
        } finally {
            buyers.shutdownNow();
        }
    }

    /** One stream of an event's sales and holds: a sale, a hold and the hold's expiry arrive as events; a reconnect resumes both parts. */
    @Test
    void aLivePageFollowsSalesAndHoldsInOneStreamAndResumes() throws Exception {
        long id = event("play", System.currentTimeMillis() + 3_600_000, 100);
        long other = event("other", System.currentTimeMillis() + 3_600_000, 100);
        BlockingQueue<String[]> events = new ArrayBlockingQueue<>(100);
        InputStream stream = open(id, null, events);
        try {
            assertEquals(201, send("POST", "/events/" + other + "/tickets", "{\"seats\":3}").statusCode());  // another event's: not sent
            assertEquals(201, send("POST", "/events/" + id + "/tickets", "{\"seats\":2}").statusCode());
            String[] sold = events.poll(10, TimeUnit.SECONDS);
            assertNotNull(sold, "the sale arrives");
            assertEquals("sold", sold[1]);
            assertEquals("{\"sold\":2}", sold[2]);
            assertEquals(201, send("POST", "/events/" + id + "/holds?holdMs=300", "{\"seat\":12,\"user\":\"ada\"}").statusCode());
            assertEquals(409, send("POST", "/events/" + id + "/holds", "{\"seat\":12,\"user\":\"bob\"}").statusCode(), "held by ada");
            String[] held = events.poll(10, TimeUnit.SECONDS);
            assertEquals("holds", held[1]);
            assertEquals("[{\"seat\":12,\"heldBy\":\"ada\"}]", held[2]);
            String[] expired = events.poll(15, TimeUnit.SECONDS);  // the sweeper lets the seat go: an event, no timer in the app
            assertNotNull(expired, "the hold's expiry arrives");
            assertEquals("[{\"seat\":12,\"expired\":true}]", expired[2]);
            assertEquals(201, send("POST", "/events/" + id + "/holds", "{\"seat\":12,\"user\":\"bob\"}").statusCode(), "free again");
            String[] bob = events.poll(10, TimeUnit.SECONDS);
            assertEquals("[{\"seat\":12,\"heldBy\":\"bob\"}]", bob[2]);

            // a reconnect with the id of the sale resumes both parts: the holds after it, and nothing twice
            stream.close();
            BlockingQueue<String[]> again = new ArrayBlockingQueue<>(100);
            stream = open(id, sold[0], again);
            List<String> resumed = new ArrayList<>();
            for (int i = 0; i < 3; i++) resumed.add(again.poll(10, TimeUnit.SECONDS)[2]);
            assertEquals(List.of("[{\"seat\":12,\"heldBy\":\"ada\"}]", "[{\"seat\":12,\"expired\":true}]", "[{\"seat\":12,\"heldBy\":\"bob\"}]"), resumed);
            assertNull(again.poll(300, TimeUnit.MILLISECONDS), "nothing more: the sale was not sent again");
        } finally {
            stream.close();
        }
    }

    /** Opens the live stream and queues its events (id, type, data) from a thread of its own. */
    private InputStream open(long id, String lastEventId, BlockingQueue<String[]> events) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/events/" + id + "/live"));
        if (lastEventId != null) b.header("Last-Event-ID", lastEventId);
        HttpResponse<InputStream> r = client.send(b.build(), BodyHandlers.ofInputStream());
        assertEquals(200, r.statusCode());
        InputStream in = r.body();
        Thread reader = new Thread(() -> {
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String eventId = null;
                String type = null;
                for (String line; (line = lines.readLine()) != null;) {
                    if (line.startsWith("id: ")) eventId = line.substring(4);
                    else if (line.startsWith("event: ")) type = line.substring(7);
                    else if (line.startsWith("data: ")) events.add(new String[] {eventId, type, line.substring(6)});
                }
            } catch (java.io.IOException e) {
                // the test closed the stream
            }
        }, "sse-reader");
        reader.setDaemon(true);
        reader.start();
        return in;
    }
}

package kiln.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.db.Db;
import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Response;
import kiln.http.ServerSentEvents;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The live endpoints' event streams, polled as a front end polls them. */
class LiveWorldsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern DATA = Pattern.compile("^data: (.*)$", Pattern.MULTILINE);

    @TempDir Path dir;
    private Db db;
    private DemoDb demo;

    @BeforeEach
    void open() {
        db = Db.open(dir);
        demo = DemoDb.open(db);
    }

    @AfterEach
    void close() {
        db.close();
    }

    private record Polled(String text, CompletableFuture<?> next) {
    }

    private static Polled poll(BodyStream body) throws Exception {
        BodyOutput out = new BodyOutput();
        CompletableFuture<?> next = body.poll(out);
        return new Polled(new String(out.array(), 0, out.length(), StandardCharsets.UTF_8), next);
    }

    /** @return the stream of {@code source}'s response, past its opening part (the {@code retry}) */
    private static BodyStream opened(ServerSentEvents.Stream stream) throws Exception {
        BodyStream body = ServerSentEvents.response(stream).stream;
        assertEquals("retry: 2000\n\n", poll(body).text);
        return body;
    }

    private World[] update(int... ids) {
        World[] rows = new World[ids.length];
        for (int i = 0; i < ids.length; i++) rows[i] = db.read(demo.world(ids[i])).join();
        return db.write(demo.updateWithNewRandomNumbers(rows)).join();
    }

    @Test
    void everyCommittedUpdateIsOneEventWhoseIdIsItsCommitSequenceNumber() throws Exception {
        Response response = ServerSentEvents.response(demo.live().subscriber(null, null));
        assertEquals(ServerSentEvents.CONTENT_TYPE, response.contentType);
        assertEquals("no", response.header("X-Accel-Buffering"));
        Polled opening = poll(response.stream);
        assertEquals("retry: 2000\n\n", opening.text, "the reconnection delay, in a part of its own");
        assertTrue(opening.next.isDone(), "poll again at once");
        Polled first = poll(response.stream);
        assertEquals("", first.text, "nothing committed yet");
        assertFalse(first.next.isDone());

        World[] updated = update(7, 8);
        first.next.get(10, TimeUnit.SECONDS);
        Polled second = poll(response.stream);
        assertTrue(second.text.startsWith("id: 1\nevent: update\ndata: {"), second.text);
        assertTrue(second.text.endsWith("}\n\n"), second.text);
        JsonNode data = data(second.text).get(0);
        assertEquals(1, data.get("seq").asLong());
        long ageUs = System.currentTimeMillis() * 1000 - data.get("committedAt").asLong();
        assertTrue(ageUs > -1000 && ageUs < 60_000_000, "committedAt is the commit's time in µs since the epoch: " + ageUs);
        assertEquals(JSON.readTree(kiln.http.Json.write(updated)), data.get("worlds"));
        assertFalse(second.next.isDone(), "waits for the next commit");
    }

    @Test
    void aRowsStreamCarriesOnlyTheCommitsThatChangedIt() throws Exception {
        BodyStream body = ServerSentEvents.response(demo.live().subscriber(null, 42)).stream;
        poll(body);
        update(1);
        update(42, 2);
        update(3);
        Polled p = poll(body);
        List<JsonNode> events = data(p.text);
        assertEquals(1, events.size(), p.text);
        assertEquals(2, events.get(0).get("seq").asLong());
        assertEquals(1, events.get(0).get("worlds").size(), "only row 42 of the commit");
        assertEquals(42, events.get(0).get("worlds").get(0).get("id").asInt());
    }

    @Test
    void aSubscriberResumesAfterItsLastEventIdAndOneFromElsewhereIsToldToReload() throws Exception {
        update(1);
        update(2);
        update(3);
        Polled resumed = poll(opened(demo.live().subscriber("1", null)));
        assertEquals(List.of(2L, 3L), data(resumed.text).stream().map(d -> d.get("seq").asLong()).toList());

        Polled ahead = poll(opened(demo.live().subscriber("99", null)));
        assertTrue(ahead.text.contains("id: 3\nevent: reload\ndata: {\"reason\":\"sequence number 99 is ahead"), ahead.text);
        assertFalse(ahead.next.isDone(), "then it goes on from the newest");
    }

    private static List<JsonNode> data(String events) throws Exception {
        Matcher m = DATA.matcher(events);
        List<JsonNode> all = new java.util.ArrayList<>();
        while (m.find()) all.add(JSON.readTree(m.group(1)));
        assertNotNull(all);
        return all;
    }
}

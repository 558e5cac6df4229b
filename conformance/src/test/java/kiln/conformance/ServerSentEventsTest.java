package kiln.conformance;

import static kiln.conformance.Contract.get;
import static kiln.conformance.Contract.getJson;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Server-sent events (WHATWG HTML, "Server-sent events") on every front end:
 * {@code /updates/events} on the wire, chunk by chunk (RFC 9112 section 7.1). A committed update
 * arrives as an event whose id is its commit sequence number; a client resumes with
 * {@code Last-Event-ID}; HEAD, HTTP/1.0, a client that goes away or never reads, and a stop.
 */
class ServerSentEventsTest {
    @RegisterExtension
    static final Servers SERVERS = new Servers("ServerSentEventsTest");

    private static final Pattern EVENT = Pattern.compile("id: (\\d+)\nevent: (\\w+)\ndata: (.*)\n\n");

    static List<FrontEnd> streaming() {
        return FrontEnd.underTest();
    }

    /** An event as received: its id, its type and its data as JSON. */
    record Event(long id, String type, JsonNode data) {
    }

    /** Opens {@code /updates/events} (with {@code extraHeaders}, CRLF-terminated), checks the head, reads the opening {@code retry}. */
    private static RawConnection subscribe(ServerProcess server, String extraHeaders) {
        return subscribe(RawConnection.open(server), extraHeaders);
    }

    /** As {@link #subscribe(ServerProcess, String)}, on a connection of the caller's (another test's server, nginx). */
    static RawConnection subscribe(RawConnection c, String extraHeaders) {
        RawResponse head = c.send("GET /updates/events HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extraHeaders + "\r\n").readStreamHead();
        assertEquals(200, head.status, head.head);
        assertEquals("text/event-stream", head.header("Content-Type"));
        assertEquals("chunked", head.header("Transfer-Encoding"));
        assertEquals("no", head.header("X-Accel-Buffering"), "nginx must not buffer the stream");
        assertEquals("no-store", head.header("Cache-Control"));
        assertNull(head.header("Content-Length"));
        assertEquals("retry: 2000\n\n", c.readChunk(), "the stream opens with the reconnection delay");
        return c;
    }

    /** Reads chunks until {@code n} events have arrived (keep-alive comments are skipped). */
    static List<Event> events(RawConnection c, int n) throws Exception {
        List<Event> events = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        while (events.size() < n) {
            String chunk = c.readChunk();
            if (chunk.isEmpty()) throw new AssertionError("the stream ended after " + events);
            text.append(chunk);
            Matcher m = EVENT.matcher(text);
            int end = 0;
            while (m.find()) {
                events.add(new Event(Long.parseLong(m.group(1)), m.group(2), Contract.JSON.readTree(m.group(3))));
                end = m.end();
            }
            text.delete(0, end);
        }
        return events;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aCommittedUpdateArrivesAsOneEventWhoseIdIsItsCommitSequenceNumber(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        try (RawConnection c = subscribe(server, "")) {
            JsonNode first = getJson(server, "/updates?queries=3");
            JsonNode second = getJson(server, "/updates?queries=1");
            List<Event> events = events(c, 2);
            assertEquals("update", events.get(0).type);
            assertEquals(first, events.get(0).data.get("worlds"), "the rows the update committed, as it answered them");
            assertEquals(second, events.get(1).data.get("worlds"));
            assertEquals(events.get(0).id + 1, events.get(1).id, "one sequence number per committed write");
            assertEquals(events.get(0).id, events.get(0).data.get("seq").asLong());
            long ageUs = System.currentTimeMillis() * 1000 - events.get(0).data.get("committedAt").asLong();
            assertTrue(ageUs > -1000 && ageUs < 60_000_000, "committedAt is µs since the epoch: " + ageUs);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aReconnectingClientResumesAfterItsLastEventId(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        long seen;
        try (RawConnection c = subscribe(server, "")) {
            getJson(server, "/updates?queries=1");
            seen = events(c, 1).get(0).id;
        }
        JsonNode missed1 = getJson(server, "/updates?queries=2");  // while the client is away
        JsonNode missed2 = getJson(server, "/updates?queries=1");
        try (RawConnection c = subscribe(server, "Last-Event-ID: " + seen + "\r\n")) {
            List<Event> resumed = events(c, 2);
            assertEquals(List.of(seen + 1, seen + 2), resumed.stream().map(Event::id).toList());
            assertEquals(missed1, resumed.get(0).data.get("worlds"));
            assertEquals(missed2, resumed.get(1).data.get("worlds"));
        }
    }

    /**
     * kill -9 of the server: the client that saw event N reconnects (to the restarted server, on the
     * same data) with {@code Last-Event-ID: N} and gets every acknowledged update after it, from the
     * change feed's durable log.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void afterAKill9AReconnectingClientResumesFromItsLastId(FrontEnd fe) throws Exception {
        try (ServerProcess first = ServerProcess.start(fe, "ServerSentEventsTest-kill")) {  // closing it deletes the data
            long seen;
            List<JsonNode> acknowledged = new ArrayList<>();
            try (RawConnection c = subscribe(first, "")) {
                getJson(first, "/updates?queries=1");
                seen = events(c, 1).get(0).id;
                for (int i = 0; i < 3; i++) acknowledged.add(getJson(first, "/updates?queries=2"));
            }
            assertEquals(137, first.kill(), "SIGKILL");
            try (ServerProcess again = ServerProcess.start(fe, first.dataDir, "ServerSentEventsTest-restarted");
                 RawConnection c = subscribe(again, "Last-Event-ID: " + seen + "\r\n")) {
                List<Event> resumed = events(c, 3);
                assertEquals(List.of(seen + 1, seen + 2, seen + 3), resumed.stream().map(Event::id).toList());
                for (int i = 0; i < 3; i++) assertEquals(acknowledged.get(i), resumed.get(i).data.get("worlds"));
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aLastEventIdThatIsNotANumberIs400AndOneFromTheFutureIsToldToReload(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        try (RawConnection c = RawConnection.open(server)) {
            RawResponse r = c.exchange("GET /updates/events HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: yesterday\r\n\r\n");
            assertEquals(400, r.status);
            assertTrue(r.bodyText().contains("Last-Event-ID must be the decimal id"), r.bodyText());
        }
        try (RawConnection c = subscribe(server, "Last-Event-ID: 999999999\r\n")) {
            Event reload = events(c, 1).get(0);
            assertEquals("reload", reload.type);
            assertTrue(reload.data.get("reason").asText().contains("ahead of the feed"), reload.data.toString());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void headIsTheStreamsHeadAndTheConnectionGoesOn(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse head = c.send("HEAD /updates/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").readHeadOnly();
            assertEquals(200, head.status);
            assertEquals("text/event-stream", head.header("Content-Type"));
            RawResponse next = c.exchange(RawConnection.get("/plaintext"));
            assertEquals("Hello, World!", next.bodyText(), "no body was sent for HEAD: the next response follows at once");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void anHttp10ClientGetsTheStreamUnchunkedUntilTheClose(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse head = c.send("GET /updates/events HTTP/1.0\r\n\r\n").readStreamHead();
            assertEquals(200, head.status);
            assertNull(head.header("Transfer-Encoding"), "HTTP/1.0 has no chunked coding (RFC 9112 section 6.1)");
            assertNull(head.header("Content-Length"));
            assertEquals("retry: 2000\n\n", c.peek(13));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aClientThatGoesAwayIsNoticedAtTheNextWriteAndCounted(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        double before = metric(server, "http_streams_ended_total{reason=\"client\"}");
        subscribe(server, "").close();
        long deadline = System.nanoTime() + 20_000_000_000L;
        // every stream of this server is closed by now (earlier tests' too): each ends at a write after its close
        while (metric(server, "http_streams_open") > 0 && System.nanoTime() < deadline) {
            getJson(server, "/updates?queries=1");  // the first write after the close may still succeed; a later one fails
            Thread.sleep(50);
        }
        assertEquals(0, metric(server, "http_streams_open"), "the stream ended");
        assertTrue(metric(server, "http_streams_ended_total{reason=\"client\"}") >= before + 1, "counted as the client's");
    }

    /**
     * Every front end watches a waiting stream's socket (Kilim's selectors, loom's stream selector, the
     * libraries' read interest of their own: {@code ClientWatch}), so a client's leaving is noticed
     * at once, not at the next event or heartbeat.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aWaitingStreamNoticesItsClientLeavingWithinASecond(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        double before = metric(server, "http_streams_ended_total{reason=\"client\"}");
        double open = metric(server, "http_streams_open");
        RawConnection c = subscribe(server, "");
        assertEquals(open + 1, metric(server, "http_streams_open"));
        long closed = System.nanoTime();
        c.close();  // no event, no heartbeat (15 s) follows: only the socket tells
        while (metric(server, "http_streams_ended_total{reason=\"client\"}") < before + 1 && System.nanoTime() - closed < 5_000_000_000L) {
            Thread.sleep(20);
        }
        long ms = (System.nanoTime() - closed) / 1_000_000;
        assertTrue(metric(server, "http_streams_ended_total{reason=\"client\"}") >= before + 1, "not noticed within 5 s");
        assertTrue(ms < 1_000, "noticed after " + ms + " ms");
        assertEquals(open, metric(server, "http_streams_open"));
    }

    /**
     * A stream's client has nothing to send: on kiln's own layer what it sends waits in the
     * connection's first KiB (a request pipelined after the stream), and 2 KiB of junk fill it; the
     * library front ends end the stream at its first byte. Either way it ends at once, as the
     * client's, not at the next event or heartbeat.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aWaitingStreamWhoseClientSendsJunkEndsWithinTwoSeconds(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        double before = metric(server, "http_streams_ended_total{reason=\"client\"}");
        double open = metric(server, "http_streams_open");
        try (RawConnection c = subscribe(server, "")) {
            assertEquals(open + 1, metric(server, "http_streams_open"));
            long sent = System.nanoTime();
            c.send("x".repeat(2048));  // no event, no heartbeat (15 s) follows: only the socket tells
            while (metric(server, "http_streams_ended_total{reason=\"client\"}") < before + 1 && System.nanoTime() - sent < 5_000_000_000L) {
                Thread.sleep(20);
            }
            long ms = (System.nanoTime() - sent) / 1_000_000;
            assertTrue(metric(server, "http_streams_ended_total{reason=\"client\"}") >= before + 1, "not ended within 5 s");
            assertTrue(ms < 2_000, "ended after " + ms + " ms");
            assertEquals(open, metric(server, "http_streams_open"));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aStopEndsEveryStreamWithItsLastChunk(FrontEnd fe) {
        try (ServerProcess server = ServerProcess.start(fe, "ServerSentEventsTest-stop")) {
            try (RawConnection a = subscribe(server, ""); RawConnection b = subscribe(server, "")) {
                server.signalTerm();
                assertEquals("", a.readChunk(), "the last chunk: a complete body, not a cut one");
                assertEquals("", b.readChunk());
                assertNull(a.closedByServer());
            }
            server.stop();
        }
    }

    /**
     * Without a minimum response rate ({@code --min-response-rate 0}) the idle timeout bounds each
     * write; with the default 240 bytes/s a 20 KB event's write may take its 5 s grace plus 85 s,
     * past this test's time limit.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("streaming")
    void aSubscriberThatNeverReadsIsCutAfterTheIdleTimeoutAndCounted(FrontEnd fe) throws Exception {
        List<String> args = List.of("--idle-timeout", "1500", "--min-response-rate", "0");
        try (ServerProcess server = ServerProcess.start(fe, "ServerSentEventsTest-stuck", args)) {
            RawConnection stuck = RawConnection.open(server);
            stuck.receiveBuffer(4096);
            stuck.send(RawConnection.get("/updates/events"));  // and never read
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (metric(server, "http_streams_ended_total{reason=\"timeout\"}") < 1 && System.nanoTime() < deadline) {
                getJson(server, "/updates?queries=500");  // events of ~20 KB fill the socket's buffers
            }
            assertEquals(1, metric(server, "http_streams_ended_total{reason=\"timeout\"}"),
                "cut once a write waited longer than the idle timeout; " + server.logText());
            assertEquals(0, metric(server, "http_streams_open"));
            stuck.close();
            server.stop();
        }
    }

    /** @return the value of one sample of {@code /metrics} (name with labels, as written), 0 when absent */
    static double metric(ServerProcess server, String sample) {
        return Contract.metricSamples(get(server, "/metrics").body()).getOrDefault(sample, 0.0);
    }
}

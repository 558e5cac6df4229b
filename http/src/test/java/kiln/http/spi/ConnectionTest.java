package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import kiln.http.spi.Connection.Action;
import org.junit.jupiter.api.Test;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Reply;
import kiln.http.Request;
import kiln.http.StreamEnd;

/**
 * The connection state machine without a network: what it says to do for the bytes read, the
 * handler's answers, the streamed body's futures, a stop, a client that leaves. Each front end on
 * kiln's layer only moves bytes and waits, so these pin the HTTP behaviour of all of them.
 */
class ConnectionTest {
    private static final String GET = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";

    private static Reply echoPath(Request r) {
        return Reply.text(r.path());
    }

    /** A streamed body whose parts are given by the test: each poll writes what was offered and waits for the next offer. */
    private static final class Feed implements BodyStream {
        final AtomicInteger polls = new AtomicInteger();
        volatile String offered = "";
        volatile CompletableFuture<Void> next = new CompletableFuture<>();
        volatile boolean complete;
        volatile long heartbeatMs = 60_000;

        void offer(String part) {
            offered = part;
            CompletableFuture<Void> f = next;
            next = new CompletableFuture<>();
            f.complete(null);
        }

        @Override
        public CompletableFuture<?> poll(BodyOutput out) {
            polls.incrementAndGet();
            if (!offered.isEmpty()) out.write(offered);
            offered = "";
            return complete ? null : next;
        }

        @Override
        public byte[] heartbeat() {
            return ": beat\n".getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        public long heartbeatMillis() {
            return heartbeatMs;
        }
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrderAndWrittenTogether() {
        Driver d = new Driver(ConnectionTest::echoPath).send(GET + GET.replace("/a", "/b"));
        assertSame(Action.READ, d.run(), "both answered, waiting for more");
        String out = d.takeWritten();
        assertTrue(out.matches("(?s)HTTP/1.1 200 OK.*\r\n\r\n/aHTTP/1.1 200 OK.*\r\n\r\n/b"), out);
        assertEquals(0, d.owner.inFlight.get());
    }

    /**
     * A request stays in flight until its answer is written: a graceful stop that saw it ended
     * earlier half-closed the socket under the unwritten response (DurabilityTest on loom, in CI:
     * the client read 0 bytes).
     */
    @Test
    void aRequestIsInFlightUntilItsAnswerIsWritten() {
        TestOwner owner = new TestOwner();
        Connection c = new Connection(owner, null);
        byte[] get = GET.getBytes(StandardCharsets.ISO_8859_1);
        c.readBuffer().put(get);
        c.read(get.length);
        assertSame(Action.HANDLE, c.next());
        assertEquals(1, owner.inFlight.get());
        c.answer(Reply.text("ok"));
        assertSame(Action.WRITE, c.next());
        assertEquals(1, owner.inFlight.get(), "answered, not yet written: still in flight");
        c.output().position(c.output().limit());
        c.written();
        assertEquals(0, owner.inFlight.get());
    }

    @Test
    void anAnswerNeverWrittenEndsItsRequestWhenTheConnectionCloses() {
        TestOwner owner = new TestOwner();
        Driver d = new Driver(owner, ConnectionTest::echoPath).send(GET);
        d.failWrites = true;
        assertSame(Action.CLOSE, d.run());
        assertEquals(0, owner.inFlight.get());
        d.c.closed();
        assertEquals(0, owner.inFlight.get(), "ended once");
    }

    @Test
    void aMalformedRequestIsAnsweredAfterThoseBeforeItThenTheConnectionCloses() {
        Driver d = new Driver(ConnectionTest::echoPath).send(GET + "GET /x HTTP/9.9\r\n\r\n" + GET);
        assertSame(Action.CLOSE, d.run());
        String out = d.takeWritten();
        assertTrue(out.startsWith("HTTP/1.1 200 OK") && out.contains("HTTP/1.1 505 "), out);
        assertFalse(out.substring(out.indexOf("505")).contains("200 OK"), "nothing after the refusal: " + out);
        assertEquals(List.of(505), d.owner.refused, "told the owner (the access log)");
    }

    @Test
    void aClientThatClosesItsSideGetsWhatItAskedThenTheConnectionCloses() {
        Driver d = new Driver(ConnectionTest::echoPath).send(GET + GET).endInput();
        assertSame(Action.CLOSE, d.run());
        assertEquals(2, d.takeWritten().split("HTTP/1.1 200 OK", -1).length - 1);
    }

    @Test
    void http10WithoutKeepAliveClosesAfterItsAnswer() {
        Driver d = new Driver(ConnectionTest::echoPath).send("GET /a HTTP/1.0\r\n\r\n");
        assertSame(Action.CLOSE, d.run());
        assertTrue(d.takeWritten().contains("Connection: close"));
    }

    @Test
    void expectContinueIsAnsweredBeforeTheContentIsRead() {
        Driver d = new Driver(r -> Reply.text(new String(r.body(), StandardCharsets.UTF_8)))
            .send("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
        assertSame(Action.READ, d.run());
        assertEquals("HTTP/1.1 100 Continue\r\n\r\n", d.takeWritten());
        d.send("ok");
        assertSame(Action.READ, d.run());
        assertTrue(d.takeWritten().endsWith("\r\n\r\nok"));
    }

    @Test
    void aStreamedBodyWaitsParkedAndEachPartWakesIt() {
        Feed feed = new Feed();
        feed.offered = "first\n";
        Driver d = new Driver(r -> Reply.stream(200, "text/plain", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        String head = d.takeWritten();
        assertTrue(head.contains("Transfer-Encoding: chunked") && head.endsWith("6\r\nfirst\n\r\n"), head);
        assertEquals(1, d.owner.streamsOpen.get());
        assertEquals(1, d.owner.inFlight.get(), "a graceful stop waits for the stream");

        AtomicInteger woken = new AtomicInteger();
        assertTrue(d.c.park(woken::incrementAndGet), "nothing to do: parked");
        feed.offer("second\n");
        assertEquals(1, woken.get(), "the part's future woke the parked loop");
        assertSame(Action.WAIT, d.run());
        assertEquals("7\r\nsecond\n\r\n", d.takeWritten());

        feed.offer("x");
        assertFalse(d.c.park(woken::incrementAndGet), "the future completed before the park: go on at once");
        assertEquals(1, woken.get());
        feed.complete = true;
        assertSame(Action.READ, d.run(), "the body ended; the connection goes on");
        assertEquals("1\r\nx\r\n0\r\n\r\n", d.takeWritten());
        assertEquals(List.of(StreamEnd.COMPLETE), d.owner.streamsEnded);
        assertEquals(0, d.owner.inFlight.get());
        assertEquals(0, d.owner.streamsOpen.get());
    }

    @Test
    void aSilentStreamSendsItsHeartbeat() throws Exception {
        Feed feed = new Feed();
        feed.heartbeatMs = 1;
        Driver d = new Driver(r -> Reply.stream(200, "text/event-stream", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        d.takeWritten();
        Thread.sleep(5);
        assertSame(Action.WAIT, d.run());
        assertEquals("7\r\n: beat\n\r\n", d.takeWritten());
    }

    @Test
    void aStopEndsAWaitingStreamWithItsLastChunkAndCloses() {
        Feed feed = new Feed();
        Driver d = new Driver(r -> Reply.stream(200, "text/plain", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        d.takeWritten();
        AtomicInteger woken = new AtomicInteger();
        assertTrue(d.c.park(woken::incrementAndGet));
        d.owner.stopping = true;
        d.c.stopStream();
        assertEquals(1, woken.get());
        assertSame(Action.CLOSE, d.run());
        assertEquals("0\r\n\r\n", d.takeWritten());
        assertEquals(List.of(StreamEnd.STOP), d.owner.streamsEnded);
    }

    @Test
    void aClientLeavingAWaitingStreamEndsItAsTheClients() {
        Feed feed = new Feed();
        Driver d = new Driver(r -> Reply.stream(200, "text/plain", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        d.c.read(-1);  // what a front end reads when the selector reports the socket readable: the client closed
        assertSame(Action.CLOSE, d.c.next());
        assertEquals(List.of(StreamEnd.CLIENT), d.owner.streamsEnded);
        assertEquals(0, d.owner.inFlight.get());
    }

    @Test
    void aFailedWriteCutsTheStreamAndABodyThatThrowsClosesWithoutTheLastChunk() {
        Feed feed = new Feed();
        Driver d = new Driver(r -> Reply.stream(200, "text/plain", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        d.failWrites = true;
        feed.offer("lost");
        assertSame(Action.CLOSE, d.run());
        assertEquals(List.of(StreamEnd.CLIENT), d.owner.streamsEnded);

        Driver e = new Driver(r -> Reply.stream(200, "text/plain", out -> {
            throw new IllegalStateException("the body's bug");
        })).send(GET);
        assertSame(Action.CLOSE, e.run());
        assertFalse(e.takeWritten().endsWith("0\r\n\r\n"), "a cut body: the client sees it unfinished");
        assertEquals(List.of(StreamEnd.ERROR), e.owner.streamsEnded);
        assertEquals(0, e.owner.inFlight.get());
    }

    @Test
    void aHeadToAStreamGetsTheHeadOnlyAndNoStream() {
        Driver d = new Driver(r -> Reply.stream(200, "text/plain", new Feed())).send("HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n");
        assertSame(Action.READ, d.run());
        assertTrue(d.takeWritten().endsWith("\r\n\r\n"));
        assertTrue(d.owner.streamsEnded.isEmpty());
        assertEquals(0, d.owner.streamsOpen.get());
    }

    @Test
    void closingWithAHandlerOrAStreamOpenCountsThemEnded() {
        Driver d = new Driver(r -> Reply.stream(200, "text/plain", new Feed())).send(GET);
        assertSame(Action.WAIT, d.run());
        d.c.closed();
        assertEquals(List.of(StreamEnd.CLIENT), d.owner.streamsEnded);
        assertEquals(0, d.owner.inFlight.get());
        Driver h = new Driver(ConnectionTest::echoPath);
        h.c.received(GET.getBytes(StandardCharsets.ISO_8859_1));
        assertSame(Action.HANDLE, h.c.next());
        assertEquals(1, h.owner.inFlight.get());
        h.c.closed();
        assertEquals(0, h.owner.inFlight.get());
        assertSame(Action.CLOSE, h.c.next());
    }
}

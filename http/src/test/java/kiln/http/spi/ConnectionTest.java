package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import kiln.http.spi.Connection.Action;
import org.junit.jupiter.api.Test;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Response;
import kiln.http.Request;
import kiln.http.StreamEnd;

/**
 * The connection state machine without a network: what it says to do for the bytes read, the
 * handler's answers, the streamed body's futures, a stop, a client that leaves. Each front end on
 * kiln's layer only moves bytes and waits, so these pin the HTTP behaviour of all of them.
 */
class ConnectionTest {
    private static final String GET = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";

    private static Response echoPath(Request r) {
        return Response.text(r.path());
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
        c.prepareRead();
        c.readBuffer().put(get);
        c.read(get.length);
        assertSame(Action.HANDLE, c.next());
        assertEquals(1, owner.inFlight.get());
        c.respond(Response.text("ok"));
        assertSame(Action.WRITE, c.next());
        assertEquals(1, owner.inFlight.get(), "answered, not yet written: still in flight");
        c.beginWrite();
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
        assertSame(Action.READ, d.run(), "a lingering close: what follows the refusal is read and dropped");
        assertTrue(d.outputShut);
        assertSame(Action.CLOSE, d.endInput().run());
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
        Driver d = new Driver(r -> Response.text(new String(r.body(), StandardCharsets.UTF_8)))
            .send("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
        assertSame(Action.READ, d.run());
        assertEquals("HTTP/1.1 100 Continue\r\n\r\n", d.takeWritten());
        d.send("ok");
        assertSame(Action.READ, d.run());
        assertTrue(d.takeWritten().endsWith("\r\n\r\nok"));
    }

    /** RFC 9110 section 10.1.1: a server ignores a 100-continue expectation in an HTTP/1.0 request. */
    @Test
    void expectContinueFromAnHttp10ClientGetsNoInterimResponse() {
        Driver d = new Driver(r -> Response.text(new String(r.body(), StandardCharsets.UTF_8)))
            .send("POST /u HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
        assertSame(Action.READ, d.run());
        assertEquals("", d.takeWritten(), "no 100 Continue to an HTTP/1.0 client");
        assertSame(Action.CLOSE, d.send("ok").run());
        String out = d.takeWritten();
        assertTrue(out.startsWith("HTTP/1.1 200 OK\r\n") && out.endsWith("\r\n\r\nok"), out);
    }

    /** The 100 Continue invites content the client has not sent: content already here needs none. */
    @Test
    void expectContinueWithItsContentAlreadyInGetsNoInterimResponse() {
        Driver d = new Driver(r -> Response.text(new String(r.body(), StandardCharsets.UTF_8)))
            .send("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nok");
        assertSame(Action.READ, d.run());
        String out = d.takeWritten();
        assertTrue(out.startsWith("HTTP/1.1 200 OK\r\n") && out.endsWith("\r\n\r\nok"), out);
    }

    /** The client sends its content once it has read the 100 Continue: the minimum rate's grace runs from the write's end. */
    @Test
    void afterA100ContinueTheContentsGraceRunsFromItsWrite() {
        TestOwner owner = new TestOwner();
        owner.minRequestRate = 100;
        owner.rateGraceMs = 1_000;
        Driver d = new Driver(owner, r -> Response.text("ok"))
            .send("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n");
        d.stallWrites = true;
        assertSame(Action.WRITE, d.run());
        owner.advance(900);
        assertSame(Connection.Shutdown.NONE, d.reap(), "the 100 Continue's write has the idle timeout, 1 s");
        d.stallWrites = false;
        assertSame(Action.READ, d.run());
        assertEquals("HTTP/1.1 100 Continue\r\n\r\n", d.takeWritten());
        owner.advance(999);
        assertSame(Connection.Shutdown.NONE, d.reap(), "the grace runs from the 100 Continue's write, not the head's arrival");
        owner.advance(1);
        assertSame(Connection.Shutdown.INPUT, d.reap());
        assertSame(Action.CLOSE, d.run());
        assertTrue(d.takeWritten().startsWith("HTTP/1.1 408 Request Timeout\r\n"));
    }

    /** Reading the buffer, the output or the request arms no deadline: only prepareRead and beginWrite do. */
    @Test
    void theGettersChangeNothing() {
        Driver d = new Driver(ConnectionTest::echoPath).send(GET);
        assertSame(Action.READ, d.run());  // answered; the idle timeout runs from here
        d.owner.advance(900);
        for (int i = 0; i < 3; i++) {
            assertSame(d.c.readBuffer(), d.c.readBuffer());
            assertEquals(null, d.c.output(), "no write under way");
            assertEquals(null, d.c.request(), "no request being handled");
        }
        d.owner.advance(100);
        assertSame(Connection.Shutdown.INPUT_AND_OUTPUT, d.reap(), "the idle timeout ran on, from the last prepareRead");
    }

    /**
     * The table of states ({@link Connection.State}) has no way back: a connection that stopped
     * reading requests never reads one again, and any state may close. (Each move the connection
     * makes is checked against the table where assertions run, as in every test here.)
     */
    @Test
    void theStatesMoveOnlyTowardsClosed() {
        for (Connection.State from : Connection.State.values()) {
            assertFalse(from.mayMoveTo(Connection.State.OPEN), from + " may not reopen");
            assertTrue(from.mayMoveTo(Connection.State.CLOSED), from + " may close");
            for (Connection.State to : Connection.State.values()) {
                if (from.mayMoveTo(to)) assertTrue(to.ordinal() >= from.ordinal(), from + " -> " + to + " goes back");
            }
        }
    }

    @Test
    void anIdleConnectionIsClosedAtTheIdleTimeoutWithoutAnAnswer() {
        Driver d = new Driver(ConnectionTest::echoPath).send(GET);
        assertSame(Action.READ, d.run());
        d.takeWritten();
        d.owner.advance(999);
        assertSame(Connection.Shutdown.NONE, d.reap(), "the idle timeout is 1 s from the last read");
        d.owner.advance(1);
        assertSame(Connection.Shutdown.INPUT_AND_OUTPUT, d.reap());
        assertSame(Action.CLOSE, d.run());
        assertEquals("", d.takeWritten(), "nothing was asked: nothing is answered");
        assertTrue(d.owner.refused.isEmpty());
    }

    /**
     * A look at the socket that finds nothing (a selector's report with no bytes behind it, as a
     * non-blocking loop makes after each answer) does not restart the idle timeout: it runs from
     * when the connection fell idle, and costs no clock read.
     */
    @Test
    void aReadThatFindsNothingDoesNotRestartTheIdleTimeout() {
        Driver d = new Driver(ConnectionTest::echoPath).send(GET);
        assertSame(Action.READ, d.run());  // answered: prepareRead armed the idle timeout
        d.c.releaseIfIdle();  // nothing more to read: the loop gives the buffer back and waits
        d.owner.advance(600);
        d.c.prepareRead();  // reported readable, and nothing is there
        d.c.releaseIfIdle();
        d.owner.advance(399);
        assertSame(Connection.Shutdown.NONE, d.reap());
        d.owner.advance(1);
        assertSame(Connection.Shutdown.INPUT_AND_OUTPUT, d.reap(), "1 s since the answer, not since the look");
    }

    /** RFC 9110 section 15.5.9: a head that does not arrive within the header timeout is answered 408, then the connection closes. */
    @Test
    void aHeadNotInWithinTheHeaderTimeoutIs408AndTheConnectionCloses() {
        Driver d = new Driver(ConnectionTest::echoPath).send("GET /a HTTP/1.1\r\nHo");
        assertSame(Action.READ, d.run());
        d.owner.advance(600);
        assertSame(Action.READ, d.send("st: h\r\n").run());
        d.owner.advance(399);
        assertSame(Connection.Shutdown.NONE, d.reap(), "the timeout runs from the head's first bytes, not its last");
        d.owner.advance(1);
        assertSame(Connection.Shutdown.INPUT, d.reap(), "the output stays open for the 408");
        assertSame(Connection.State.OPEN, d.c.state(), "the reaper only half-closes: the loop learns it by its read");
        assertSame(Connection.Shutdown.NONE, d.reap(), "expired once");
        assertSame(Action.CLOSE, d.run());
        String out = d.takeWritten();
        assertTrue(out.startsWith("HTTP/1.1 408 Request Timeout\r\n") && out.contains("\r\nConnection: close\r\n"), out);
        assertEquals(List.of(408), d.owner.refused);
        assertFalse(d.outputShut, "the client's side is shut already: no lingering close");
    }

    /**
     * Kestrel's MinRequestBodyDataRate: once the head is in, each byte of content buys 1/rate s and
     * the client may be at most the grace period behind; slower content is answered 408.
     */
    @Test
    void contentSlowerThanTheMinimumRateIs408AfterTheGrace() {
        TestOwner owner = new TestOwner();
        owner.minRequestRate = 100;
        owner.rateGraceMs = 1_000;
        Driver d = new Driver(owner, r -> Response.text(r.body().length + " bytes"))
            .send("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n" + "x".repeat(10));
        assertSame(Action.READ, d.run());
        for (int i = 0; i < 30; i++) {  // 3 s at the rate: never behind
            owner.advance(100);
            assertSame(Connection.Shutdown.NONE, d.reap(), "at the rate, " + (i + 1) * 100 + " ms in");
            assertSame(Action.READ, d.send("x".repeat(10)).run());
        }
        owner.advance(500);
        assertSame(Action.READ, d.send("x".repeat(10)).run());  // half the rate from here: 100 ms bought per 500 ms
        owner.advance(499);
        assertSame(Connection.Shutdown.NONE, d.reap(), "a grace of 1 s, less the 500 ms behind, plus the 100 ms its bytes bought");
        owner.advance(101);
        assertSame(Connection.Shutdown.INPUT, d.reap());
        assertSame(Action.CLOSE, d.run());
        String out = d.takeWritten();
        assertTrue(out.startsWith("HTTP/1.1 408 Request Timeout\r\n") && out.contains("slower than 100 bytes/s"), out);
        assertEquals(List.of(408), owner.refused);
    }

    /**
     * Kestrel's MinResponseDataRate: a response written to a client that does not read gets the
     * grace period plus its bytes at the minimum rate; then the reaper cuts both sides.
     */
    @Test
    void aResponseTheClientDoesNotReadIsCutAtItsWriteDeadline() {
        TestOwner owner = new TestOwner();
        owner.minResponseRate = 1_000;
        owner.rateGraceMs = 1_000;
        Driver d = new Driver(owner, r -> Response.text("x".repeat(10_000))).send(GET);
        d.stallWrites = true;
        assertSame(Action.WRITE, d.run());
        owner.advance(11_000);
        assertSame(Connection.Shutdown.NONE, d.reap(), "1 s of grace plus 10 s for the body's 10,000 bytes, and the head's");
        owner.advance(1_000);
        assertSame(Connection.Shutdown.INPUT_AND_OUTPUT, d.reap());
        assertEquals(1, owner.inFlight.get(), "in flight until the write fails");
        assertSame(Action.CLOSE, d.run());
        assertEquals(0, owner.inFlight.get());

        Driver idle = new Driver(ConnectionTest::echoPath).send(GET);  // no minimum rate: the idle timeout bounds a write
        idle.stallWrites = true;
        assertSame(Action.WRITE, idle.run());
        idle.owner.advance(999);
        assertSame(Connection.Shutdown.NONE, idle.reap());
        idle.owner.advance(1);
        assertSame(Connection.Shutdown.INPUT_AND_OUTPUT, idle.reap());
        assertSame(Action.CLOSE, idle.run());
    }

    /**
     * RFC 9112 section 9.6: after a refusal the output is shut down and what the client still sends
     * is read and dropped, so that the kernel does not reset the connection under the refusal;
     * for at most 2 s (then the reaper shuts the input) and 1 MiB.
     */
    @Test
    void aRefusalEndsInALingeringCloseBoundedInTimeAndBytes() {
        Driver d = new Driver(ConnectionTest::echoPath).send("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n");
        assertSame(Action.READ, d.run(), "lingering: reading what the client still sends");
        assertTrue(d.takeWritten().startsWith("HTTP/1.1 400 Bad Request\r\n"));
        assertTrue(d.outputShut, "the output is shut down once the refusal is written");
        assertSame(Connection.State.LINGERING, d.c.state());
        assertSame(Action.READ, d.send("the content the client was sending").run());
        assertEquals("", d.takeWritten(), "dropped, not parsed");
        d.owner.advance(1_999);
        assertSame(Connection.Shutdown.NONE, d.reap());
        d.owner.advance(1);
        assertSame(Connection.Shutdown.INPUT_AND_OUTPUT, d.reap(), "2 s of lingering");
        assertSame(Action.CLOSE, d.run());
        assertSame(Connection.State.CLOSED, d.c.state());

        Driver e = new Driver(ConnectionTest::echoPath).send("GET /a HTTP/9.9\r\n\r\n");
        assertSame(Action.READ, e.run());
        byte[] mebibyte = new byte[1 << 20];
        for (int i = 0; i < 1023; i++) assertSame(Action.READ, e.send(Arrays.copyOf(mebibyte, 1024)).run());
        assertSame(Action.CLOSE, e.send(Arrays.copyOf(mebibyte, 1024)).run(), "1 MiB discarded: closed without waiting for the end");
    }

    @Test
    void aStreamedBodyWaitsParkedAndEachPartWakesIt() {
        Feed feed = new Feed();
        feed.offered = "first\n";
        Driver d = new Driver(r -> Response.stream(200, "text/plain", feed)).send(GET);
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
    void aSilentStreamSendsItsHeartbeatOnItsOwnersClock() {
        Feed feed = new Feed();
        feed.heartbeatMs = 15_000;
        Driver d = new Driver(r -> Response.stream(200, "text/event-stream", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        d.takeWritten();
        d.owner.advance(14_999);
        assertSame(Action.WAIT, d.run());
        assertEquals("", d.takeWritten(), "not yet due");
        d.owner.advance(1);
        assertSame(Action.WAIT, d.run());
        assertEquals("7\r\n: beat\n\r\n", d.takeWritten());
        d.owner.advance(14_999);
        assertSame(Action.WAIT, d.run());
        assertEquals("", d.takeWritten(), "the next one 15 s after this one");
    }

    /** A body that asks to be polled again at once, forever, with nothing to send (a combined future reused once complete) is ended, not spun. */
    @Test
    void aStreamThatNeverWritesAndNeverWaitsIsEndedInsteadOfSpinning() {
        AtomicInteger polls = new AtomicInteger();
        CompletableFuture<Void> done = CompletableFuture.completedFuture(null);
        BodyStream spinning = out -> {
            polls.incrementAndGet();
            return done;
        };
        Driver d = new Driver(r -> Response.stream(200, "text/event-stream", spinning)).send(GET);
        assertSame(Action.CLOSE, d.run(), "ended: the chunked body is cut, the connection closes");
        assertEquals(StreamedBody.MAX_IDLE_POLLS, polls.get());
        assertEquals(List.of(StreamEnd.ERROR), d.owner.streamsEnded);
    }

    /** The driver lends the buffers ({@link Connection.Owner#buffers}): each comes back once, and none is held once the connection is idle or closed. */
    @Test
    void everyBufferBorrowedIsGivenBackOnceAndAnIdleConnectionHoldsNone() {
        TestOwner owner = new TestOwner();
        String big = "GET /" + "x".repeat(3000) + " HTTP/1.1\r\nHost: h\r\n\r\n";  // a head that grows the read buffer
        Driver d = new Driver(owner, r -> Response.text("y".repeat(5000))).send(GET + big + GET);  // responses that grow the output
        assertSame(Action.READ, d.run());
        assertEquals(3, d.takeWritten().split("HTTP/1.1 200 OK", -1).length - 1);
        assertTrue(owner.buffers.taken > 0, "the connection borrowed from its owner's pool, not a static one");
        assertTrue(owner.buffers.outstanding() <= 1, "waiting for a request: at most the read buffer it reads into");
        d.c.closed();
        assertEquals(0, owner.buffers.outstanding(), "closed: every buffer given back");
    }

    @Test
    void aStopEndsAWaitingStreamWithItsLastChunkAndCloses() {
        Feed feed = new Feed();
        Driver d = new Driver(r -> Response.stream(200, "text/plain", feed)).send(GET);
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
        Driver d = new Driver(r -> Response.stream(200, "text/plain", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        d.c.read(-1);  // what a front end reads when the selector reports the socket readable: the client closed
        assertSame(Action.CLOSE, d.c.next());
        assertEquals(List.of(StreamEnd.CLIENT), d.owner.streamsEnded);
        assertEquals(0, d.owner.inFlight.get());
    }

    @Test
    void aFailedWriteCutsTheStreamAndABodyThatThrowsClosesWithoutTheLastChunk() {
        Feed feed = new Feed();
        Driver d = new Driver(r -> Response.stream(200, "text/plain", feed)).send(GET);
        assertSame(Action.WAIT, d.run());
        d.failWrites = true;
        feed.offer("lost");
        assertSame(Action.CLOSE, d.run());
        assertEquals(List.of(StreamEnd.CLIENT), d.owner.streamsEnded);

        Driver e = new Driver(r -> Response.stream(200, "text/plain", out -> {
            throw new IllegalStateException("the body's bug");
        })).send(GET);
        assertSame(Action.CLOSE, e.run());
        assertFalse(e.takeWritten().endsWith("0\r\n\r\n"), "a cut body: the client sees it unfinished");
        assertEquals(List.of(StreamEnd.ERROR), e.owner.streamsEnded);
        assertEquals(0, e.owner.inFlight.get());
    }

    @Test
    void aHeadToAStreamGetsTheHeadOnlyAndNoStream() {
        Driver d = new Driver(r -> Response.stream(200, "text/plain", new Feed())).send("HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n");
        assertSame(Action.READ, d.run());
        assertTrue(d.takeWritten().endsWith("\r\n\r\n"));
        assertTrue(d.owner.streamsEnded.isEmpty());
        assertEquals(0, d.owner.streamsOpen.get());
    }

    @Test
    void closingWithAHandlerOrAStreamOpenCountsThemEnded() {
        Driver d = new Driver(r -> Response.stream(200, "text/plain", new Feed())).send(GET);
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

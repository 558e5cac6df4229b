package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

import kiln.http.Response;
import kiln.http.StreamEnd;
import kiln.http.spi.Connection.Action;
import org.junit.jupiter.api.Test;

/**
 * The server's request memory, as one connection reserves from it: nothing for a request that fits
 * the connection's first KiB, its grown buffer and then its content until the handler answers for
 * a larger one, 503 with Retry-After for one that does not fit, all of it given back at the end; a
 * stream's client that fills the first KiB ends its stream.
 */
class RequestMemoryTest {
    private static String post(int length) {
        return "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: " + length + "\r\n\r\n" + "x".repeat(length);
    }

    @Test
    void aRequestThatFitsTheFirstKibReservesNothing() {
        TestOwner owner = new TestOwner();
        owner.memory = new MemoryBudget(1 << 20);
        AtomicLong during = new AtomicLong(-1);
        Driver d = new Driver(owner, r -> {
            during.set(owner.memory.used());
            return Response.text("ok");
        }).send(post(100));
        assertSame(Action.READ, d.run());
        assertEquals(0, during.get());
        assertEquals(0, owner.memory.used());
    }

    @Test
    void aLargerRequestHoldsItsContentUntilTheHandlerAnswersThenNothing() {
        TestOwner owner = new TestOwner();
        owner.memory = new MemoryBudget(1 << 20);
        AtomicLong during = new AtomicLong(-1);
        Driver d = new Driver(owner, r -> {
            during.set(owner.memory.used());
            return Response.text(Integer.toString(r.body().length));
        }).send(post(40_000));
        assertSame(Action.READ, d.run());
        assertTrue(d.takeWritten().endsWith("\r\n\r\n40000"));
        assertEquals(40_000, during.get(), "while the handler runs: its content, and no buffer beyond the first KiB");
        assertTrue(owner.memory.peak() >= 40_000 && owner.memory.peak() <= 2 * 65_536, "the grown buffer, at most double: " + owner.memory.peak());
        assertEquals(0, owner.memory.used(), "all given back once answered");
        d.c.closed();
        assertEquals(0, owner.memory.used());
    }

    @Test
    void aRequestTheMemoryCannotHoldIs503WithRetryAfterAndTheConnectionCloses() {
        TestOwner owner = new TestOwner();
        owner.memory = new MemoryBudget(16 * 1024);
        Driver d = new Driver(owner, r -> Response.text("never")).send(post(40_000));
        assertSame(Action.READ, d.run(), "a lingering close discards what the client still sends");
        assertTrue(d.outputShut);
        assertSame(Action.CLOSE, d.endInput().run());
        String out = d.takeWritten();
        assertTrue(out.startsWith("HTTP/1.1 503 Service Unavailable\r\n") && out.contains("\r\nRetry-After: 1\r\n")
            && out.contains("\r\nConnection: close\r\n"), out);
        assertEquals(List.of(503), owner.refused);
        assertEquals(1, owner.memory.refusals());
        d.c.closed();
        assertEquals(0, owner.memory.used(), "nothing held after the close");
    }

    @Test
    void chunkedContentCopiedByTheParserIsReservedToo() {
        TestOwner owner = new TestOwner();
        owner.memory = new MemoryBudget(1 << 20);
        StringBuilder chunked = new StringBuilder("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int i = 0; i < 10; i++) chunked.append("1000\r\n").append("c".repeat(4096)).append("\r\n");
        AtomicLong during = new AtomicLong(-1);
        Driver d = new Driver(owner, r -> {
            during.set(owner.memory.used());
            return Response.text(Integer.toString(r.body().length));
        }).send(chunked + "0\r\n\r\n");
        assertSame(Action.READ, d.run());
        assertTrue(d.takeWritten().endsWith("40960"));
        assertEquals(40_960, during.get());
        assertEquals(0, owner.memory.used());
    }

    @Test
    void aStreamsClientThatFillsTheFirstKibEndsTheStream() {
        Driver d = new Driver(r -> Response.stream(200, "text/plain", out -> new CompletableFuture<>()))
            .send("GET /s HTTP/1.1\r\nHost: h\r\n\r\n");
        assertSame(Action.WAIT, d.run());
        d.c.read(pump(d, 500));
        assertSame(Action.WAIT, d.c.next(), "500 bytes: a pipelined request, perhaps; kept");
        d.c.read(pump(d, 2000));
        assertSame(Action.CLOSE, d.c.next(), "more than the first KiB: a client with nothing to send sent it");
        assertEquals(List.of(StreamEnd.CLIENT), d.owner.streamsEnded);
    }

    /** Puts up to {@code n} bytes into the connection's read buffer, as a front end's read would. @return how many */
    private static int pump(Driver d, int n) {
        d.c.prepareRead();
        java.nio.ByteBuffer b = d.c.readBuffer();
        int k = Math.min(n, b.remaining());
        b.put("y".repeat(k).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        return k;
    }
}

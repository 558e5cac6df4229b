package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.List;

import kiln.http.StreamEnd;
import kiln.http.Response;
import kiln.http.Request;
import org.junit.jupiter.api.Test;

/**
 * --max-streams and --max-client-streams: a streamed response is counted open from its answer until its
 * body ends, and one past the cap or past its client's share is answered 503 with Retry-After, in the
 * one pipeline every front end ends in.
 */
class StreamCapTest {
    private static Response respond(StepRouter router, String method, String client) {
        Request request = Request.of(method, "/events");
        if (client != null) request.remoteAddress(new InetSocketAddress(client, 40_000));
        AbstractRouter.Exchange<StepHandler> x = router.begin(request);
        return x.respond(Response.stream(200, "text/event-stream", out -> null));
    }

    private static StepRouter router(ServerLimits limits) {
        return new StepRouter(Metrics.off()).limits(limits).steps("GET", "/events", request -> Step.of(Response.text("unused")));
    }

    @Test
    void aStreamPastTheCapIs503AndAHeadIsNotAStream() {
        StepRouter router = router(ServerLimits.defaults().maxStreams(2));
        Response first = respond(router, "GET", null);
        assertNotNull(first.stream, "none open: streamed");
        assertNotNull(respond(router, "GET", null).stream);
        Response refused = respond(router, "GET", null);
        assertNull(refused.stream);
        assertEquals(503, refused.status);
        assertEquals("1", refused.header("Retry-After"));
        assertEquals(200, respond(router, "HEAD", null).status, "a HEAD gets the head only: no stream opens");
        first.stream.ended(StreamEnd.COMPLETE);
        first.stream.ended(StreamEnd.CLIENT);  // a second end counts nothing
        assertNotNull(respond(router, "GET", null).stream, "one ended: room again");
        assertEquals(503, respond(router, "GET", null).status, "and only one");
        assertNotNull(respond(new StepRouter(Metrics.off()).steps("GET", "/events", request -> Step.of(Response.text("x"))), "GET", null).stream,
            "no cap unless set");
    }

    @Test
    void oneClientCannotTakeEveryStreamButAProxyInFrontMay() {
        StepRouter router = router(ServerLimits.defaults().maxStreams(10).maxClientStreams(2));
        Response a1 = respond(router, "GET", "192.0.2.1");
        assertNotNull(a1.stream);
        assertNotNull(respond(router, "GET", "192.0.2.1").stream);
        Response third = respond(router, "GET", "192.0.2.1");
        assertEquals(503, third.status, "a client's third stream");
        String detail = new String(third.body, java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(detail.contains("192.0.2.1"), detail);
        assertNotNull(respond(router, "GET", "192.0.2.2").stream, "another client has its own share");
        a1.stream.ended(StreamEnd.CLIENT);
        assertNotNull(respond(router, "GET", "192.0.2.1").stream, "a closed stream leaves its client's count at once");
        for (int i = 0; i < 7; i++) assertNotNull(respond(router, "GET", "127.0.0.1").stream, "the proxy in front (loopback) is not a client");
        assertEquals(503, respond(router, "GET", "127.0.0.1").status, "but the cap holds for all");
        assertEquals(10, router.clients().streamsOpen());
    }

    @Test
    void aFilterThatReplacesAStreamLeavesNothingCounted() {
        StepRouter router = router(ServerLimits.defaults().maxStreams(1));
        router.filter(new Filter() {
            @Override
            public Response after(Request request, Response response) {
                return Response.text("replaced");
            }
        });
        assertEquals(List.of(200, 200), List.of(respond(router, "GET", null).status, respond(router, "GET", null).status));
        assertEquals(0, router.clients().streamsOpen());
    }

    /**
     * The default stream cap is what the heap holds beside the request memory at the front end's
     * bytes per stream, where that is below the connection cap: the Jetty front ends, whose streams
     * hold 7-13 KB each, ran out of heap at 18,000-19,500 subscribers without it. {@code --max-streams}
     * wins; a front end whose streams are cheap keeps no cap but the connection cap.
     */
    @Test
    void theDefaultStreamCapIsWhatTheHeapHoldsAtTheFrontEndsBytesPerStream() {
        long heap = Runtime.getRuntime().maxMemory();
        int perStream = 1 << 20;  // a MB a stream: the cap is far below the connection cap on any heap
        ServerLimits limits = ServerOptions.of().limits(2048, perStream);
        long expected = Math.max(16, (heap - ServerOptions.HEAP_RESERVE - limits.maxRequestMemory()) / perStream);
        assertEquals(expected, limits.maxStreams(), "the heap's streams");
        assertTrue(limits.maxStreams() < limits.maxConnections(), "below the connection cap");
        assertEquals(5, ServerOptions.of("--max-streams", "5").limits(2048, perStream).maxStreams(), "--max-streams wins");
        assertEquals(Integer.MAX_VALUE, ServerOptions.of().limits(2048, 2048).maxStreams(),
            "streams no dearer than connections: the connection cap alone");
    }
}

package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import kiln.http.StreamEnd;
import kiln.http.Reply;
import kiln.http.Request;
import org.junit.jupiter.api.Test;

/** --max-streams: a streamed reply past the cap is answered 503 with Retry-After, in the one pipeline every front end ends in. */
class StreamCapTest {
    private static Reply answer(StepRouter router, String method) {
        AbstractRouter.Exchange<StepHandler> x = router.begin(Request.of(method, "/events"));
        return x.answer(Reply.stream(200, "text/event-stream", out -> null));
    }

    @Test
    void aStreamPastTheCapIs503AndAHeadIsNotAStream() {
        Metrics metrics = Metrics.off();
        StepRouter router = new StepRouter(metrics).maxStreams(2)
            .steps("GET", "/events", request -> Step.of(Reply.text("unused")));
        assertNotNull(answer(router, "GET").stream, "none open: streamed");
        metrics.streamStarted();
        metrics.streamStarted();
        Reply refused = answer(router, "GET");
        assertNull(refused.stream);
        assertEquals(503, refused.status);
        assertEquals("1", refused.header("Retry-After"));
        assertEquals(200, answer(router, "HEAD").status, "a HEAD gets the head only: no stream opens");
        metrics.streamEnded(StreamEnd.COMPLETE);
        assertNotNull(answer(router, "GET").stream, "one ended: room again");
        assertNotNull(answer(new StepRouter(metrics).steps("GET", "/events", request -> Step.of(Reply.text("x"))), "GET").stream,
            "no cap unless set");
    }
}

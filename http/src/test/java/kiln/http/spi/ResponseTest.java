package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import kiln.http.Http;
import kiln.http.Response;

/** Response's shapes, and the bytes kiln's own layer writes for them (ResponseWriter, through a Connection). */
class ResponseTest {
    /** The whole response {@code response} gets when it answers {@code rawRequest} on a kiln connection, Date masked. */
    static String onTheWire(String rawRequest, Response response) {
        Connection c = new Connection(new TestOwner(), null);
        c.received(rawRequest.getBytes(StandardCharsets.ISO_8859_1));
        assertSame(Connection.Action.HANDLE, c.next());
        c.respond(response);
        c.beginWrite();
        ByteBuffer out = c.output();
        byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        c.written();
        return new String(bytes, StandardCharsets.UTF_8).replaceFirst("Date: [^\r]*\r\n", "Date: D\r\n");
    }

    private static final String GET = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";

    @Test
    void noContentIsA204WithItsReasonPhraseAndNeitherContentTypeNorContentLengthNorBody() {
        Response r = Response.noContent();
        assertEquals(204, r.status);
        assertNull(r.contentType);
        assertEquals(0, r.body.length);
        assertEquals("HTTP/1.1 204 No Content\r\nServer: kiln\r\nDate: D\r\n\r\n", onTheWire(GET, r));
        assertEquals("HTTP/1.1 204 No Content\r\nServer: kiln\r\nDate: D\r\nLocation: /todos\r\nConnection: keep-alive\r\n\r\n",
            onTheWire("DELETE /todos/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", r.header("Location", "/todos")));
        assertEquals("HTTP/1.1 204 No Content\r\nServer: kiln\r\nDate: D\r\n\r\n", onTheWire("HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n", r));
    }

    @Test
    void aReplyOf204IsRefusedInFavourOfNoContent() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Response.of(204, Http.TEXT_PLAIN, new byte[1]));
        assertEquals("a 204 has no content type and no body: use Response.noContent()", e.getMessage());
    }

    @Test
    void emptyIsStillA200WithContentLengthZero() {
        assertEquals("HTTP/1.1 200 OK\r\nServer: kiln\r\nDate: D\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: 0\r\n\r\n",
            onTheWire(GET, Response.empty()));
    }

    @Test
    void anErrorIsProblemDetailsWhenTheClientPrefersJsonKeepingItsHeaders() {
        Response r = Response.methodNotAllowed("POST", "/plaintext", "GET, HEAD, OPTIONS").negotiated("application/json");
        assertEquals(405, r.status);
        assertEquals("application/problem+json", r.contentType);
        assertEquals("{\"type\":\"about:blank\",\"title\":\"Method Not Allowed\",\"status\":405,\"detail\":\"POST is not allowed on /plaintext\"}",
            new String(r.body, StandardCharsets.UTF_8));
        assertEquals("GET, HEAD, OPTIONS", r.header("Allow"));
        assertEquals("1", Response.unavailable("busy").negotiated("application/problem+json").header("Retry-After"));
        assertEquals("{\"type\":\"about:blank\",\"title\":\"Not Found\",\"status\":404}",
            new String(Response.error(404, null).negotiated("application/json").body, StandardCharsets.UTF_8), "no detail, no member");
    }

    @Test
    void anErrorStaysPlainTextUnlessTheClientPrefersJsonAndOtherRepliesAreNeverRewritten() {
        Response error = Response.notFound("/nope");
        assertSame(error, error.negotiated(null));
        assertSame(error, error.negotiated("*/*"));
        assertSame(error, error.negotiated("text/plain, application/json"));
        Response json = Response.json(java.util.Map.of("a", 1));
        assertSame(json, json.negotiated("application/json"));
        Response handlerMade = Response.of(409, Http.TEXT_PLAIN, "taken\n".getBytes(StandardCharsets.UTF_8));
        assertSame(handlerMade, handlerMade.negotiated("application/json"), "a body a handler wrote itself is its own");
    }
}

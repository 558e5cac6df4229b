package kiln.comsat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.eclipse.jetty.http.BadMessageException;
import org.junit.jupiter.api.Test;

class JettyConnectionsTest {
    private static final BadMessageException JETTY_505 = new BadMessageException(505, "Unknown Version");

    @Test
    void malformedVersionIs400() {
        BadMessageException e = JettyConnections.classify(JETTY_505, "GET /plaintext HTTP/1.x");
        assertEquals(400, e.getCode());
        assertEquals("malformed HTTP version", e.getReason());
    }

    @Test
    void missingVersionIs400() {
        BadMessageException e = JettyConnections.classify(JETTY_505, "GET /plaintext");
        assertEquals(400, e.getCode());
        assertEquals("malformed request line: expected METHOD SP TARGET SP VERSION", e.getReason());
    }

    @Test
    void wellFormedUnsupportedVersionIs505WithTheSharedDetail() {
        BadMessageException e = JettyConnections.classify(JETTY_505, "GET /plaintext HTTP/9.9");
        assertEquals(505, e.getCode());
        assertEquals("HTTP version 9.9 not supported; use HTTP/1.1", e.getReason());
    }

    @Test
    void http2OverHttp11Is505NotJettys426() {
        BadMessageException e = JettyConnections.classify(new BadMessageException(426), "GET /plaintext HTTP/2.0");
        assertEquals(505, e.getCode());
        assertEquals("HTTP version 2.0 not supported; use HTTP/1.1", e.getReason());
    }

    @Test
    void otherFailuresPassThrough() {
        BadMessageException e = new BadMessageException(400, "No URI");
        assertSame(e, JettyConnections.classify(e, "GARBAGE"));
    }
}

package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import kiln.http.Response;
import kiln.http.Request;

/** The content limit is the server's (--max-content): kiln's own layer reads up to it, and refuses more with 413. */
class ContentLimitTest {
    /** A connection whose server allows {@code max} content bytes, fed {@code raw}. */
    private static Connection connection(int max, String raw) {
        Connection c = new Connection(new TestOwner(max), null);
        c.received(raw.getBytes(StandardCharsets.ISO_8859_1));
        return c;
    }

    private static String post(int length, String content) {
        return "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: " + length + "\r\n\r\n" + content;
    }

    private static String written(Connection c) {
        assertSame(Connection.Action.WRITE, c.next());
        c.beginWrite();
        ByteBuffer out = c.output();
        byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Test
    void contentUpToTheServersLimitIsReadAndMoreIs413() {
        String body = "x".repeat(100_000);  // over the default 64 KiB
        Connection big = connection(200_000, post(body.length(), body));
        assertSame(Connection.Action.HANDLE, big.next(), "100,000 bytes under a 200,000-byte limit");
        Request r = big.request();
        assertEquals(100_000, r.body().length);

        Connection small = connection(10, post(11, "x".repeat(11)));
        String refused = written(small);
        assertTrue(refused.startsWith("HTTP/1.1 413 Content Too Large") && refused.contains("request body of 11 bytes exceeds 10"), refused);

        Connection chunked = connection(10, "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nxxxxxxxxxxx\r\n0\r\n\r\n");
        assertTrue(written(chunked).contains("chunked body exceeds 10 bytes"));
    }

    @Test
    void theLibraryFrontEndsRefuseByTheSameLimit() {
        assertNull(RequestParser.refuseRequest(3, 100_000, null, "h", 200_000));
        Response r = RequestParser.refuseRequest(3, 11, null, "h", 10);
        assertEquals(413, r.status);
        assertEquals(400, RequestParser.refuseRequest(3, -1, "chunked, identity", "h", 10).status);
        assertEquals(400, RequestParser.refuseRequest(3, -1, null, "a/b", 10).status);
    }
}

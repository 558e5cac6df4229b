package kiln.comsat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

class ContractHeadTest {
    private static final String DATE = "Date: Sun, 22 Nov 2026 16:19:12 GMT\r\n";
    private static final String TEXT = "Content-Type: text/plain; charset=UTF-8\r\n";

    /** A header buffer as Jetty's generator leaves it: flush mode, head at position..limit. */
    private static ByteBuffer generated(String head, int capacity) {
        ByteBuffer b = ByteBuffer.allocate(capacity);
        b.put(head.getBytes(StandardCharsets.US_ASCII)).flip();
        return b;
    }

    private static String text(ByteBuffer b) {
        byte[] bytes = new byte[b.remaining()];
        b.duplicate().get(bytes);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    @Test
    void theRequestsConnectionAnswerMovesToTheEnd() {
        // Jetty: the request's Connection answer first (added while parsing), Content-Length last of the fields.
        ByteBuffer b = generated("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nServer: kiln\r\n" + DATE + TEXT
            + "Content-Length: 13\r\n\r\n", 512);

        ContractHead.rewrite(b, 200);

        assertEquals("HTTP/1.1 200 OK\r\nServer: kiln\r\n" + DATE + TEXT + "Content-Length: 13\r\nConnection: keep-alive\r\n\r\n", text(b));
    }

    @Test
    void extraFieldsStayBeforeContentLength() {
        ByteBuffer b = generated("HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\nServer: kiln\r\n" + DATE + TEXT
            + "Allow: GET\r\nContent-Length: 58\r\n\r\n", 512);

        ContractHead.rewrite(b, 405);

        assertEquals("HTTP/1.1 405 Method Not Allowed\r\nServer: kiln\r\n" + DATE + TEXT
            + "Allow: GET\r\nContent-Length: 58\r\nConnection: close\r\n\r\n", text(b));
    }

    @Test
    void reasonPhraseIsTheContractsNotJettys() {
        ByteBuffer internal = generated("HTTP/1.1 500 Server Error\r\nServer: kiln\r\n" + DATE + TEXT + "Content-Length: 5\r\n\r\n", 512);
        ContractHead.rewrite(internal, 500);
        assertEquals("HTTP/1.1 500 Internal Server Error\r\nServer: kiln\r\n" + DATE + TEXT + "Content-Length: 5\r\n\r\n", text(internal));

        ByteBuffer parser = generated("HTTP/1.1 400 No URI\r\nServer: kiln\r\n" + DATE + TEXT + "Content-Length: 5\r\nConnection: close\r\n\r\n", 512);
        ContractHead.rewrite(parser, 400);
        assertEquals("HTTP/1.1 400 Bad Request\r\nServer: kiln\r\n" + DATE + TEXT + "Content-Length: 5\r\nConnection: close\r\n\r\n", text(parser));
    }

    @Test
    void aHeadInTheContractsFormIsNotTouched() {
        String head = "HTTP/1.1 200 OK\r\nServer: kiln\r\n" + DATE + TEXT + "Content-Length: 13\r\n\r\nHello, World!";
        ByteBuffer b = generated(head, 512);
        b.put(b.limit() - 1, (byte) '?');  // not the contract's body: would be restored by a copy

        ContractHead.rewrite(b, 200);

        assertEquals(head.substring(0, head.length() - 1) + "?", text(b));
    }

    @Test
    void bytesAfterTheHeadAndThePositionAreKept() {
        ByteBuffer b = ByteBuffer.allocate(512);
        b.put("junk".getBytes(StandardCharsets.US_ASCII));
        b.put("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nServer: kiln\r\n\r\nD\r\n".getBytes(StandardCharsets.US_ASCII));
        b.flip().position(4);

        ContractHead.rewrite(b, 200);

        assertEquals(4, b.position());
        assertEquals("HTTP/1.1 200 OK\r\nServer: kiln\r\nContent-Length: 2\r\n\r\nD\r\n", text(b));
    }

    @Test
    void leavesInformationalAndIncompleteHeadsAlone() {
        String cont = "HTTP/1.1 100 Continue\r\n\r\n";
        ByteBuffer b = generated(cont, 64);
        ContractHead.rewrite(b, 100);
        assertEquals(cont, text(b));

        String partial = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nServer: kiln\r\n";
        ByteBuffer p = generated(partial, 64);
        ContractHead.rewrite(p, 200);
        assertEquals(partial, text(p));
    }

    @Test
    void leavesTheHeadAloneWhenTheRewriteWouldNotFit() {
        String head = "HTTP/1.1 500 Server Error\r\nContent-Length: 5\r\n\r\n";
        ByteBuffer b = generated(head, head.length());

        ContractHead.rewrite(b, 500);

        assertEquals(head, text(b));
    }
}

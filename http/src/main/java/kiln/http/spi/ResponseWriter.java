package kiln.http.spi;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

import kiln.http.Http;
import kiln.http.HttpDate;
import kiln.http.Response;


/**
 * Encodes responses into a connection's output bytes, headers in the order {@link Http} fixes for
 * every front end: Server, Date, Content-Type, the response's further headers (Allow, Retry-After,
 * Location...) in the order added, Content-Length, then Connection when needed; a 204 without
 * Content-Type, Content-Length and body. The status line is always HTTP/1.1, the
 * highest version this server conforms to (RFC 9110 section 6.2), also for HTTP/1.0 requests.
 *
 * <p>The one writer of kiln's wire bytes: a {@link Connection}'s responses, and whole closing
 * responses ({@link #closing}) for the one-shot 503 over the connection cap and for a server
 * library's hook that can only write raw bytes (a 408 to a slow client).
 */
public final class ResponseWriter {
    private static final byte[] CRLF = {'\r', '\n'};
    private static final byte[] COLON_SP = {':', ' '};
    private static final byte[] SERVER = ("\r\nServer: " + Http.SERVER + "\r\nDate: ").getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONTENT_TYPE = "\r\nContent-Type: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONTENT_LENGTH = "\r\nContent-Length: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CHUNKED = "\r\nTransfer-Encoding: chunked".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] LAST_CHUNK = "0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] KEEP_ALIVE = "\r\nConnection: keep-alive".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CLOSE = "\r\nConnection: close".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] STATUS_200 = "HTTP/1.1 200 OK".getBytes(StandardCharsets.US_ASCII);
    private static final ConcurrentHashMap<String, byte[]> ASCII_CACHE = new ConcurrentHashMap<>();

    private ResponseWriter() {
    }

    /**
     * Appends one response.
     *
     * @param minorVersion the request's HTTP minor version (0 or 1): HTTP/1.0 keep-alive needs an
     *                     explicit {@code Connection: keep-alive}
     * @param keepAlive    whether the connection stays open after this response
     * @param head         true when answering HEAD: the head only, Content-Length still that of the
     *                     body GET would get (RFC 9110 section 9.3.2)
     * @param date         the {@code Date} header's value, 29 ASCII bytes ({@link HttpDate#nowAscii()})
     */
    static void write(Output out, int minorVersion, Response r, boolean keepAlive, boolean head, byte[] date) {
        out.put(r.status == 200 ? STATUS_200 : ascii("HTTP/1.1 " + r.status + " " + Http.reason(r.status)));
        out.put(SERVER);
        out.put(date);
        if (r.contentType != null) {
            out.put(CONTENT_TYPE);
            out.put(ascii(r.contentType));
        }
        for (int i = 0; i < r.headerCount(); i++) {
            out.put(CRLF);
            out.put(ascii(r.headerName(i)));
            out.put(COLON_SP);
            out.put(r.headerValue(i).getBytes(StandardCharsets.ISO_8859_1));
        }
        // A 204 has no content and must not carry Content-Length (RFC 9110 section 8.6); its end is the head's end.
        // A streamed body is chunked for HTTP/1.1; for HTTP/1.0 it ends when the connection closes (RFC 9112 section 6.3).
        if (r.stream != null) {
            if (minorVersion >= 1) out.put(CHUNKED);
        } else if (r.status != 204) {
            out.put(CONTENT_LENGTH);
            out.putDecimal(r.body.length);
        }
        if (!keepAlive) {
            out.put(CLOSE);
        } else if (minorVersion == 0) {
            out.put(KEEP_ALIVE);
        }
        out.put(CRLF);
        out.put(CRLF);
        if (!head && r.status != 204 && r.stream == null) out.put(r.body);
    }

    /** Appends one part of a streamed body: a chunk when {@code chunked}, else the bytes as they are; nothing for no bytes. */
    static void part(Output out, byte[] b, int off, int len, boolean chunked) {
        if (len == 0) return;
        if (chunked) {
            out.putHex(len);
            out.put(CRLF);
        }
        out.put(b, off, len);
        if (chunked) out.put(CRLF);
    }

    /** Appends the end of a chunked body: the last chunk and an empty trailer section (RFC 9112 section 7.1). */
    static void lastChunk(Output out) {
        out.put(LAST_CHUNK);
    }

    /**
     * @return the whole response to {@code response} with {@code Connection: close}, head in the
     *         contract's order, ASCII head then the body: for a socket the server writes once and closes
     */
    public static byte[] closing(Response response) {
        Output out = new Output(SharedBufferPool.SHARED);
        write(out, 1, response, false, false, HttpDate.nowAscii());
        ByteBuffer bytes = out.toByteBuffer();
        byte[] all = new byte[bytes.remaining()];
        bytes.get(all);
        out.release();
        return all;
    }

    /** Header strings repeat (content types, status lines, header names): encode each once. */
    private static byte[] ascii(String s) {
        byte[] b = ASCII_CACHE.get(s);
        if (b == null) {
            b = s.getBytes(StandardCharsets.ISO_8859_1);
            if (ASCII_CACHE.size() < 256) ASCII_CACHE.put(s, b);
        }
        return b;
    }
}

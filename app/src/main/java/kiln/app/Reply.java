package kiln.app;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What an endpoint answers, before any server turns it into bytes: the status, the
 * {@code Content-Type}, the body and at most one extra header ({@code Allow} on 405,
 * {@code Retry-After} on 503). The front end writes the headers in the order {@link Http} gives:
 * {@code Server, Date, Content-Type}, the extra header, {@code Content-Length}, then
 * {@code Connection} when needed.
 */
public final class Reply {
    public final int status;
    public final String contentType;
    public final byte[] body;
    /** Name of the extra header, or null when there is none. */
    public final String extraHeader;
    /** Value of the extra header, or null when there is none. */
    public final String extraValue;

    private Reply(int status, String contentType, byte[] body, String extraHeader, String extraValue) {
        this.status = status;
        this.contentType = contentType;
        this.body = body;
        this.extraHeader = extraHeader;
        this.extraValue = extraValue;
    }

    /** @return 200 OK with {@code body} as the endpoint's content type */
    public static Reply ok(Http.Endpoint endpoint, byte[] body) {
        return new Reply(200, endpoint.contentType, body, null, null);
    }

    /**
     * @param status an error status (4xx, 5xx)
     * @param detail a short explanation for the body, or null
     * @return the error with body {@link Bodies#error} as {@link Http#TEXT_PLAIN}; 405 carries
     *         {@code Allow: GET} (RFC 9110 section 15.5.6), 503 {@code Retry-After: 1} (section 10.2.3)
     */
    public static Reply error(int status, String detail) {
        byte[] body = Bodies.error(status, Http.reason(status), detail);
        switch (status) {
            case 405: return new Reply(status, Http.TEXT_PLAIN, body, "Allow", "GET");
            case 503: return new Reply(status, Http.TEXT_PLAIN, body, "Retry-After", "1");
            default: return new Reply(status, Http.TEXT_PLAIN, body, null, null);
        }
    }

    /** @return 404 for a path no endpoint serves (RFC 9110 section 15.5.5) */
    public static Reply notFound(String path) {
        return error(404, "no such path: " + path);
    }

    /** @return 405 with {@code Allow: GET} for a known path asked with another method */
    public static Reply methodNotAllowed(String method, String path) {
        return error(405, method + " is not allowed on " + path);
    }

    /** @return 503 with {@code Retry-After: 1}, for {@link kiln.db.DbException.Overloaded} */
    public static Reply overloaded() {
        return error(503, "the database is overloaded; retry shortly");
    }

    /**
     * @param version the request's version number, e.g. {@code 9.9}
     * @return 505 for a well-formed HTTP version other than 1.0 and 1.1 (RFC 9110 section 15.6.6)
     */
    public static Reply versionNotSupported(String version) {
        return error(505, "HTTP version " + version + " not supported; use HTTP/1.1");
    }

    /**
     * The limits a server library does not apply itself, for front ends whose library parses
     * requests: more than {@link Http#MAX_HEADERS} header fields is 431 (RFC 6585 section 5);
     * content is never read, so a request declaring more than {@link Http#MAX_CONTENT} bytes, or
     * chunked content (whose framing cannot be checked without reading it), is 413 (RFC 9110
     * section 15.5.14). Checked before any endpoint runs. Send the refusal with
     * {@code Connection: close}: unread content must not be taken for a request.
     *
     * @param headerCount   how many header fields the request has
     * @param contentLength the request's Content-Length, or -1 when it has none
     * @param chunked       true when the request has a Transfer-Encoding
     * @return the refusal to send and close, or null to serve the request
     */
    public static Reply refuseRequest(int headerCount, long contentLength, boolean chunked) {
        if (headerCount > Http.MAX_HEADERS) {
            return error(431, headerCount + " header fields; at most " + Http.MAX_HEADERS + " accepted");
        }
        if (chunked) return error(413, "chunked request content is not accepted; the endpoints take no content");
        if (contentLength > Http.MAX_CONTENT) {
            return error(413, "request content of " + contentLength + " bytes; at most " + Http.MAX_CONTENT + " accepted");
        }
        return null;
    }

    /** @return 500 with a short body; the cause belongs in the server log, not in the response */
    public static Reply internalError() {
        return error(500, "internal error (see the server log)");
    }

    /**
     * The whole response as bytes, head in the contract's order ({@link Http}) with
     * {@code Connection: close}: for a server library's hook that can only write raw bytes to the
     * socket before closing it (a 408 to a slow client).
     *
     * @return status line, headers and body, ASCII head
     */
    public byte[] toClosingResponse() {
        StringBuilder head = new StringBuilder(160)
            .append("HTTP/1.1 ").append(status).append(' ').append(Http.reason(status)).append("\r\n")
            .append("Server: ").append(Http.SERVER).append("\r\n")
            .append("Date: ").append(HttpDate.now()).append("\r\n")
            .append("Content-Type: ").append(contentType).append("\r\n");
        if (extraHeader != null) head.append(extraHeader).append(": ").append(extraValue).append("\r\n");
        head.append("Content-Length: ").append(body.length).append("\r\n")
            .append("Connection: close\r\n\r\n");
        byte[] h = head.toString().getBytes(StandardCharsets.US_ASCII);
        byte[] all = Arrays.copyOf(h, h.length + body.length);
        System.arraycopy(body, 0, all, h.length, body.length);
        return all;
    }

    @Override
    public String toString() {
        return "Reply{" + status + ", " + contentType + ", " + body.length + " bytes"
            + (extraHeader == null ? "" : ", " + extraHeader + ": " + extraValue) + '}';
    }
}

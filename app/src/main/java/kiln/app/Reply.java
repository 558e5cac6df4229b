package kiln.app;

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

    /** @return 500 with a short body; the cause belongs in the server log, not in the response */
    public static Reply internalError() {
        return error(500, "internal error (see the server log)");
    }

    @Override
    public String toString() {
        return "Reply{" + status + ", " + contentType + ", " + body.length + " bytes"
            + (extraHeader == null ? "" : ", " + extraHeader + ": " + extraValue) + '}';
    }
}

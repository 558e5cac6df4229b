package kiln.http;

/**
 * The HTTP contract every front end follows, so that benchmark responses are the same size
 * everywhere: the response head
 * <pre>
 * HTTP/1.1 200 OK             (always HTTP/1.1, also to HTTP/1.0 requests: RFC 9110 section 6.2)
 * Server: kiln
 * Date: Sun, 22 Nov 2026 16:19:12 GMT
 * Content-Type: ...
 * Allow: GET                  (the response's further headers, in the order added: Allow on 405,
 *                              Retry-After on 503, Location, Set-Cookie... from a handler)
 * Content-Length: ...
 * Connection: keep-alive      (only when answering an HTTP/1.0 keep-alive request)
 * Connection: close           (only when the server closes the connection after the response)
 * </pre>
 * A 204 No Content ({@link Response#noContent}) has neither Content-Type nor Content-Length, and no
 * body (RFC 9110 sections 15.3.5 and 8.6).
 * Jetty writes Content-Length and Connection after every other header, which fixes this order.
 * Undertow writes headers in the order of its internal hash table; its front end sends the same
 * names, values and sizes in that order (a documented deviation).
 */
public final class Http {
    /** Value of the {@code Server} header. */
    public static final String SERVER = "kiln";

    /** Plain text in UTF-8: {@link Response#text}'s and an error's {@code Content-Type}. */
    public static final String TEXT_PLAIN = "text/plain; charset=UTF-8";
    /** JSON, UTF-8 by definition (RFC 8259 section 8.1, so no charset parameter): {@link Response#json}'s. */
    public static final String APPLICATION_JSON = "application/json";
    /** HTML in UTF-8: {@link Response#html}'s. */
    public static final String TEXT_HTML = "text/html; charset=UTF-8";
    /** RFC 9457 problem details, the JSON form of an error response ({@link Response#negotiated}). */
    public static final String APPLICATION_PROBLEM_JSON = "application/problem+json";

    /** tchar per RFC 9110 section 5.6.2, indexed by ASCII code. */
    private static final boolean[] TOKEN = alphanumericAnd("!#$%&'*+-.^_`|~");
    /** A reg-name's characters besides percent-encodings: unreserved and sub-delims (RFC 3986 section 3.2.2), indexed by ASCII code. */
    private static final boolean[] REG_NAME = alphanumericAnd("-._~!$&'()*+,;=");

    private Http() {
    }

    /** @return a table by ASCII code (128 entries) true for letters, digits and {@code others} */
    private static boolean[] alphanumericAnd(String others) {
        boolean[] table = new boolean[128];
        for (char c = '0'; c <= '9'; c++) table[c] = true;
        for (char c = 'a'; c <= 'z'; c++) table[c] = true;
        for (char c = 'A'; c <= 'Z'; c++) table[c] = true;
        for (char c : others.toCharArray()) table[c] = true;
        return table;
    }

    /** @return true when {@code c} may appear in a token: a method, a header name (RFC 9110 section 5.6.2) */
    public static boolean isTokenChar(int c) {
        return c > 0 && c < 128 && TOKEN[c];
    }

    /**
     * @return true when {@code c} may appear in a host's reg-name or IPv4 address as itself (RFC 3986
     *         section 3.2.2: unreserved or sub-delims; a {@code %} starts a percent-encoding instead)
     */
    public static boolean isRegNameChar(int c) {
        return c > 0 && c < 128 && REG_NAME[c];
    }

    /** @return the RFC 9110 reason phrase for the status codes this project sends */
    public static String reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 201: return "Created";
            case 204: return "No Content";
            case 301: return "Moved Permanently";
            case 302: return "Found";
            case 303: return "See Other";
            case 307: return "Temporary Redirect";
            case 308: return "Permanent Redirect";
            case 400: return "Bad Request";
            case 401: return "Unauthorized";
            case 403: return "Forbidden";
            case 404: return "Not Found";
            case 405: return "Method Not Allowed";
            case 406: return "Not Acceptable";
            case 408: return "Request Timeout";
            case 409: return "Conflict";
            case 410: return "Gone";
            case 413: return "Content Too Large";
            case 414: return "URI Too Long";
            case 415: return "Unsupported Media Type";
            case 422: return "Unprocessable Content";
            case 429: return "Too Many Requests";
            case 431: return "Request Header Fields Too Large";
            case 500: return "Internal Server Error";
            case 501: return "Not Implemented";
            case 503: return "Service Unavailable";
            case 504: return "Gateway Timeout";
            case 505: return "HTTP Version Not Supported";
            case 507: return "Insufficient Storage";
            default: return "Status " + status;
        }
    }
}

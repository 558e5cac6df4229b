package kiln.app;

/**
 * The HTTP contract every front end follows, so that benchmark responses are the same size
 * everywhere: the endpoint paths, and the response head
 * <pre>
 * HTTP/1.1 200 OK             (always HTTP/1.1, also to HTTP/1.0 requests: RFC 9110 section 6.2)
 * Server: kiln
 * Date: Sun, 22 Nov 2026 16:19:12 GMT
 * Content-Type: ...
 * Allow: GET                  (405 only; 503 carries Retry-After: 1 here instead)
 * Content-Length: ...
 * Connection: keep-alive      (only when answering an HTTP/1.0 keep-alive request)
 * Connection: close           (only when the server closes the connection after the response)
 * </pre>
 * Jetty writes Content-Length and Connection after every other header, which fixes this order.
 * Undertow writes headers in the order of its internal hash table; its front end sends the same
 * names, values and sizes in that order (a documented deviation).
 */
public final class Http {
    /** Value of the {@code Server} header. */
    public static final String SERVER = "kiln";

    public static final String TEXT_PLAIN = "text/plain; charset=UTF-8";
    public static final String APPLICATION_JSON = "application/json";
    public static final String TEXT_HTML = "text/html; charset=UTF-8";

    /**
     * Most request content a front end accepts, bytes. No endpoint reads content; a front end that
     * parses requests itself (kilim) reads and drops up to this much, the others refuse chunked
     * content unread ({@link Reply#refuseRequest}).
     */
    public static final int MAX_CONTENT = 64 * 1024;

    /** Most header fields a request may carry (431 beyond it, RFC 6585 section 5). */
    public static final int MAX_HEADERS = 100;

    private Http() {
    }

    /** The demo's endpoints. All accept only GET; any other method gets 405 with {@code Allow: GET}. */
    public enum Endpoint {
        INDEX("/", TEXT_HTML),
        PLAINTEXT("/plaintext", TEXT_PLAIN),
        JSON("/json", APPLICATION_JSON),
        DB("/db", APPLICATION_JSON),
        QUERIES("/queries", APPLICATION_JSON),
        UPDATES("/updates", APPLICATION_JSON),
        FORTUNES("/fortunes", TEXT_HTML),
        HELLO("/hello", TEXT_PLAIN);

        public final String path;
        public final String contentType;

        Endpoint(String path, String contentType) {
            this.path = path;
            this.contentType = contentType;
        }

        /** @return the endpoint for a request path (without query string), or null: answer 404 */
        public static Endpoint of(String path) {
            switch (path) {
                case "/": return INDEX;
                case "/plaintext": return PLAINTEXT;
                case "/json": return JSON;
                case "/db": return DB;
                case "/queries": return QUERIES;
                case "/updates": return UPDATES;
                case "/fortunes": return FORTUNES;
                case "/hello": return HELLO;
                default: return null;
            }
        }
    }

    /** @return the RFC 9110 reason phrase for the status codes this project sends */
    public static String reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 400: return "Bad Request";
            case 404: return "Not Found";
            case 405: return "Method Not Allowed";
            case 408: return "Request Timeout";
            case 413: return "Content Too Large";
            case 414: return "URI Too Long";
            case 431: return "Request Header Fields Too Large";
            case 500: return "Internal Server Error";
            case 501: return "Not Implemented";
            case 503: return "Service Unavailable";
            case 505: return "HTTP Version Not Supported";
            default: return "Status " + status;
        }
    }
}

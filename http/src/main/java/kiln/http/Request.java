package kiln.http;

import java.net.InetSocketAddress;
import java.util.List;

/**
 * An HTTP request as a handler sees it, whichever server parsed it: kiln's own {@link kiln.http.spi.RequestParser}
 * (with its headers, content, version and keep-alive), or a server library's, through a front end that
 * passes the method and target ({@link #of(String, String, String)}). Immutable but for the route the
 * router matched, which it sets before the handler runs so that {@link #pathParam} reads its template.
 *
 * <p>Header names keep the client's spelling; {@link #header} ignores case (RFC 9110 section 5.1).
 *
 * <pre>{@code
 * .put("/rooms/{room}/messages/{id}", req -> {
 *     String room = req.pathParam("room");                  // a segment of the path, decoded
 *     long id = req.pathParamLong("id");                    // /rooms/a/messages/05: 404
 *     int limit = req.intParam("limit", 20, 1, 100);        // ?limit=500: 400 naming it
 *     String key = req.header("idempotency-key");           // any case; null when absent
 *     Message m = req.json(Message.class);                  // the content; 400 or 415 when it is not JSON
 *     ...
 * })
 * }</pre>
 *
 * <p>A request's errors are {@link HttpException}s with the status the client gets (400, 404, 415),
 * so a handler lets them through.
 */
public final class Request {
    private static final byte[] NO_BODY = {};

    private final String method;
    private final String target;
    private final String path;
    private final String rawQuery;
    private final int minorVersion;
    /** Field names and values, alternating, in the order received. */
    private final List<String> headers;
    private final byte[] body;
    private final boolean keepAlive;
    /** The route the router matched, for {@link #pathParam}; null until it is routed. */
    private PathTemplate route;
    /** The client's address as the front end saw it, or null when unknown. */
    private InetSocketAddress remoteAddress;
    /** What middleware learned of this request (its id, the authenticated user), by name; null until the first. */
    private java.util.Map<String, Object> attributes;

    private Request(String method, String target, String path, String rawQuery, int minorVersion,
            List<String> headers, byte[] body, boolean keepAlive) {
        this.method = method;
        this.target = target;
        this.path = path;
        this.rawQuery = rawQuery;
        this.minorVersion = minorVersion;
        this.headers = headers;
        this.body = body;
        this.keepAlive = keepAlive;
    }

    /**
     * A request an HTTP layer parsed itself, whole: for kiln's parser ({@code kiln.http.spi.RequestParser})
     * and a front end of your own.
     *
     * @param target       the request-target as sent
     * @param path         its path in the normal form ({@link Paths#normalize})
     * @param rawQuery     its query without '?', still percent-encoded, or null
     * @param minorVersion 0 for HTTP/1.0, 1 for HTTP/1.1
     * @param headers      field names and values, alternating, in the order received
     * @param body         the content, empty for none (not copied)
     * @param keepAlive    whether the connection stays open after the response (RFC 9112 section 9.3)
     */
    public static Request parsed(String method, String target, String path, String rawQuery, int minorVersion,
                                 List<String> headers, byte[] body, boolean keepAlive) {
        return new Request(method, target, path, rawQuery, minorVersion, headers, body, keepAlive);
    }

    /**
     * A request as if a client had sent {@code METHOD TARGET HTTP/1.1} with no header fields and no
     * content: for code that takes a request without running a server (tests).
     *
     * @param target an origin-form target, e.g. {@code /queries?queries=5}; the path must be in its
     *               normal form ({@link Paths#normalize})
     * @throws IllegalArgumentException when {@code target} does not start with '/'
     */
    public static Request of(String method, String target) {
        if (!target.startsWith("/")) throw new IllegalArgumentException("target must start with '/': " + target);
        int q = target.indexOf('?');
        return of(method, q < 0 ? target : target.substring(0, q), q < 0 ? null : target.substring(q + 1));
    }

    /**
     * A request with its method and target only: no header fields, no content.
     *
     * @param path     the path in its normal form ({@link Paths#normalize}), or {@code *}
     * @param rawQuery the query without '?', still percent-encoded, or null
     */
    public static Request of(String method, String path, String rawQuery) {
        return of(method, path, rawQuery, List.of());
    }

    /**
     * As {@link #of(String, String, String)}, with the header fields the library parsed.
     *
     * @param headers field names and values, alternating, in the order received
     */
    public static Request of(String method, String path, String rawQuery, List<String> headers) {
        return of(method, path, rawQuery, headers, NO_BODY);
    }

    /**
     * As {@link #of(String, String, String, List)}, with the request's content as the library read
     * it (within the server's content limit, {@code --max-content}).
     *
     * @param body the content, empty for none (not copied: do not modify it afterwards)
     */
    public static Request of(String method, String path, String rawQuery, List<String> headers, byte[] body) {
        return new Request(method, rawQuery == null ? path : path + "?" + rawQuery, path, rawQuery, 1, headers, body, true);
    }

    /** @return the method token, case-sensitive as sent: "GET", "POST"... */
    public String method() {
        return method;
    }

    /** @return the request-target as sent, e.g. {@code /queries?queries=5} */
    public String target() {
        return target;
    }

    /** @return the path of the target in its normal form ({@link Paths}), without the query, e.g. {@code /queries} */
    public String path() {
        return path;
    }

    /** @return the query part of the target without '?', still percent-encoded, or null when there is none */
    public String rawQuery() {
        return rawQuery;
    }

    /** @return 0 for HTTP/1.0, 1 for HTTP/1.1 */
    public int minorVersion() {
        return minorVersion;
    }

    /**
     * Reads a header field: {@code req.header("if-none-match")}. A field sent more than once gives
     * its first value; a list in one field (RFC 9110 section 5.3) comes as it was sent.
     *
     * @param name the field name, in any case (RFC 9110 section 5.1)
     * @return the first value of that field without its surrounding whitespace, or null when absent
     */
    public String header(String name) {
        for (int i = 0; i < headers.size(); i += 2) {
            if (headers.get(i).equalsIgnoreCase(name)) return headers.get(i + 1);
        }
        return null;
    }

    /** @return the request content (empty when there is none); do not modify it */
    public byte[] body() {
        return body;
    }

    /**
     * @return whether the connection stays open after the response: HTTP/1.1 unless
     *         {@code Connection: close}; HTTP/1.0 only with {@code Connection: keep-alive}
     *         (RFC 9112 section 9.3)
     */
    public boolean keepAlive() {
        return keepAlive;
    }

    /**
     * Reads a query parameter as text: {@code req.param("after")} of {@code /messages?after=AbC}.
     * Numbers: {@link #intParam(String, int, int, int)}.
     *
     * @param name the parameter's name, compared exactly (after decoding)
     * @return the first value of query parameter {@code name}, percent-decoded as UTF-8 ("" for a
     *         bare {@code ?name}), or null when absent
     * @throws HttpException 400 on a malformed percent-escape
     */
    public String param(String name) {
        return QueryParams.get(rawQuery, name);
    }

    /**
     * Reads an integer query parameter with a default, any int accepted:
     * {@code int offset = req.intParam("offset", 0);}. To bound it, {@link #intParam(String, int, int, int)}.
     *
     * @param name         the query parameter, e.g. {@code limit} of {@code /todos?limit=20}
     * @param defaultValue the value when it is absent or empty
     * @return its value as a decimal integer
     * @throws HttpException 400 naming the parameter when it is not an integer, or out of int's range
     */
    public int intParam(String name, int defaultValue) {
        return QueryParams.intValue(rawQuery, name, defaultValue, Integer.MIN_VALUE, Integer.MAX_VALUE);
    }

    /**
     * Reads an integer query parameter with a default and a range:
     * {@code int limit = req.intParam("limit", 20, 1, 100);} ({@link QueryParams#intValue}).
     *
     * @param name         the query parameter, e.g. {@code limit} of {@code /todos?limit=20}
     * @param defaultValue the value when the parameter is absent or empty
     * @param min          the smallest value accepted
     * @param max          the largest value accepted
     * @return its value, in {@code min..max}, or {@code defaultValue}
     * @throws HttpException 400 naming the parameter when it is not an integer or out of the range,
     *                       e.g. {@code query parameter 'limit' must be 1..100, got 500}
     */
    public int intParam(String name, int defaultValue, int min, int max) {
        return QueryParams.intValue(rawQuery, name, defaultValue, min, max);
    }

    /**
     * Reads a parameter of the route's path template: on the route {@code /rooms/{room}}, the request
     * {@code /rooms/the%20lobby} gives {@code req.pathParam("room")} = {@code "the lobby"}. A parameter
     * is one whole segment, never empty ({@code /rooms/} does not match); a {@code %2F} in it decodes
     * to '/'. A number: {@link #pathParamLong}.
     *
     * @param name a parameter of the route's path template, e.g. {@code id} of {@code /todos/{id}}
     * @return that segment of the path, percent-decoded as UTF-8
     * @throws IllegalArgumentException when the route has no such parameter
     * @throws IllegalStateException    before the request was routed
     * @throws HttpException            400 when the segment is badly percent-encoded
     */
    public String pathParam(String name) {
        if (route == null) throw new IllegalStateException("pathParam(\"" + name + "\") before the request was routed");
        return route.param(path, name);
    }

    /**
     * Reads a numeric path parameter, such as the id of {@code /todos/{id}}, in its canonical
     * decimal form only: {@code 0}, or a digit 1-9 followed by digits 0-9 (ASCII), up to
     * {@link Long#MAX_VALUE}. Every other spelling of a number names nothing: {@code /todos/05},
     * {@code /todos/+5}, {@code /todos/%2B5} (decoded to {@code +5}), {@code /todos/%205},
     * another script's digits ({@code /todos/%D9%A5}, which {@code Long.parseLong} takes as 5).
     *
     * <p>Why: a rule keyed on paths ({@code --auth-paths /todos/5}, a cache, a rate limit, nginx's
     * {@code location}) compares path strings, even in their normal form ({@link Paths}); a handler
     * that parses leniently serves one resource under many paths, and the rule covers only the one
     * it names. With one path per resource, a rule on the path protects what the handler serves.
     *
     * @param name a parameter of the route's path template, e.g. {@code id} of {@code /todos/{id}}
     * @return its value, 0..{@link Long#MAX_VALUE}
     * @throws HttpException            404 naming the parameter and its value (decoded, at most 40
     *                                  characters) when it is not in that form or above
     *                                  {@link Long#MAX_VALUE}: {@code path parameter 'id' names nothing:
     *                                  '05' is not a number in canonical form (decimal digits, no sign or
     *                                  leading zero)}; 400 when the segment is badly percent-encoded
     * @throws IllegalArgumentException when the route has no such parameter
     * @throws IllegalStateException    before the request was routed
     */
    public long pathParamLong(String name) {
        String value = pathParam(name);
        boolean canonical = !value.isEmpty() && (value.equals("0") || value.charAt(0) != '0');
        for (int i = 0; canonical && i < value.length(); i++) {
            canonical = value.charAt(i) >= '0' && value.charAt(i) <= '9';
        }
        String named = "path parameter '" + name + "' names nothing: '" + QueryParams.shortened(value) + "' is ";
        if (!canonical) throw new HttpException(404, named + "not a number in canonical form (decimal digits, no sign or leading zero)");
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException tooLarge) {
            throw new HttpException(404, named + "above " + Long.MAX_VALUE);
        }
    }

    /**
     * Reads the content as JSON with Jackson. A request that says its content is something else
     * ({@code Content-Type: text/plain}, or {@code application/x-www-form-urlencoded}, what
     * {@code curl -d} and an HTML form send) is refused: a browser sends those cross-origin without
     * asking first (a CORS preflight), so taking them as JSON would let another site post to the API
     * (CSRF). A request without Content-Type is read as JSON.
     *
     * @param type the class to bind to, e.g. {@code Todo.class} (public fields or a creator Jackson can use)
     * @return the value
     * @throws HttpException 415 when the Content-Type is neither {@code application/json} nor
     *                       {@code +json} (RFC 6839); 400 with the parser's message when the content
     *                       is empty or not such JSON (content over {@link Limits#MAX_CONTENT} was
     *                       refused with 413 before)
     */
    public <T> T json(Class<T> type) {
        String contentType = header("content-type");
        if (contentType != null && !isJson(contentType)) {
            throw new HttpException(415, "the content must be JSON: send Content-Type: application/json (it said " + contentType
                + "; with curl: --json '{...}')");
        }
        return Json.read(body, type);
    }

    /** @return whether a Content-Type names JSON: {@code application/json} or a {@code +json} type, any parameters */
    static boolean isJson(String contentType) {
        int semicolon = contentType.indexOf(';');
        String media = (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).trim().toLowerCase(java.util.Locale.ROOT);
        return media.equals("application/json") || media.startsWith("application/") && media.endsWith("+json");
    }

    /**
     * @return the address of the client this request came from (for an access log; behind a proxy
     *         such as nginx, the proxy's: read its {@code X-Forwarded-For} header), or null when the
     *         front end did not say
     */
    public InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    /** Set by the front end that received the request, before it is routed. @return this request */
    public Request remoteAddress(InetSocketAddress address) {
        remoteAddress = address;
        return this;
    }

    /**
     * Reads what middleware learned of this request: {@code (String) req.attribute(Authentication.USER)},
     * the user a bearer token named, or the request id. A filter sets it in its {@code before}, so a
     * handler behind the filter sees it.
     *
     * @param name an attribute's name, e.g. {@code kiln.server.RequestId.ATTRIBUTE}
     * @return what middleware set under {@code name} for this request (a request id, the
     *         authenticated user), or null
     */
    public Object attribute(String name) {
        return attributes == null ? null : attributes.get(name);
    }

    /** Sets attribute {@code name} for the handler and the middleware after it; a request is one thread's at a time. */
    public void attribute(String name, Object value) {
        if (attributes == null) attributes = new java.util.HashMap<>(4);
        attributes.put(name, value);
    }

    /** Remembers the route the router matched, so that {@link #pathParam} reads its template. */
    public void routed(PathTemplate matched) {
        route = matched;
    }

    /** @return the route as registered and the method, e.g. {@code GET /todos/{id}}, for a log line; the path until routed */
    public String routeName() {
        return method + " " + (route != null ? route.pattern() : path);
    }

    @Override
    public String toString() {
        return method + " " + target + " HTTP/1." + minorVersion;
    }
}

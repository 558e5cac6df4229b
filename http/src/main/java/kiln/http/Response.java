package kiln.http;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * An HTTP response before any server turns it into bytes: the status, the {@code Content-Type}, the
 * body and any number of further headers ({@code Location}, {@code Set-Cookie},
 * {@code Cache-Control}...). The one response type of every front end and every handler. Immutable:
 * {@link #header} returns a copy.
 *
 * <p>Every front end writes it in the contract's order ({@link Http}): {@code Server}, {@code Date},
 * {@code Content-Type}, the further headers in the order they were added, {@code Content-Length},
 * then {@code Connection} when needed. The server writes {@code Server}, {@code Date},
 * {@code Content-Length}, {@code Connection} and the framing itself, so {@link #header} refuses them.
 * {@link kiln.http.spi.ResponseWriter} is the one writer of its wire bytes.
 *
 * <pre>{@code
 * return Response.json(todo).header("Location", "/todos/" + id);
 * }</pre>
 */
public final class Response {
    /** Headers the server writes itself (lower case); a handler cannot set them. */
    private static final Set<String> SERVER_HEADERS =
        Set.of("server", "date", "content-type", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade");
    private static final String[] NO_HEADERS = {};

    /** The status code, 200..599 (RFC 9110 section 15). */
    public final int status;
    /** The {@code Content-Type} value; null for a 204 ({@link #noContent}), which has none. */
    public final String contentType;
    /** The whole body (empty for none, and for a streamed response); do not modify it. */
    public final byte[] body;
    /** Further headers as name, value, name, value... in the order added. */
    private final String[] headers;
    /**
     * An error response's detail ("" for none), kept so that {@link #negotiated} can write it as
     * problem details; null for every other response.
     */
    private final String problemDetail;
    /** The body sent in parts as they come ({@link #stream}), or null: then {@link #body} is the whole body. */
    public final BodyStream stream;

    private Response(int status, String contentType, byte[] body, String[] headers, String problemDetail) {
        this(status, contentType, body, headers, problemDetail, null);
    }

    private Response(int status, String contentType, byte[] body, String[] headers, String problemDetail, BodyStream stream) {
        this.status = status;
        this.contentType = contentType;
        this.body = body;
        this.headers = headers;
        this.problemDetail = problemDetail;
        this.stream = stream;
    }

    /**
     * A response whose body is sent in parts as they come, for as long as {@code body} says: on
     * HTTP/1.1 with the chunked transfer coding (RFC 9112 section 7.1), to an HTTP/1.0 client as a
     * body that ends when the connection closes (RFC 9112 section 6.3). HEAD gets the head only.
     * For server-sent events, {@link ServerSentEvents#response} builds one.
     *
     * @param status      200..599, not 204
     * @param contentType e.g. {@code text/event-stream}
     * @param body        gives the parts; run by the front end on the connection's fiber or thread
     * @return the response
     */
    public static Response stream(int status, String contentType, BodyStream body) {
        Response head = of(status, contentType, new byte[0]);
        return new Response(head.status, head.contentType, head.body, NO_HEADERS, null, java.util.Objects.requireNonNull(body, "body"));
    }

    /**
     * @param status      a status code, 200..599
     * @param contentType the {@code Content-Type} value, e.g. {@link Http#APPLICATION_JSON}
     * @param body        the body bytes (not copied: do not modify them afterwards)
     * @return the response
     * @throws IllegalArgumentException when {@code status} is outside 200..599 (1xx and 304
     *                                  framing are the server's business), or 204 ({@link #noContent})
     */
    public static Response of(int status, String contentType, byte[] body) {
        if (status < 200 || status > 599) throw new IllegalArgumentException("status must be 200..599, got " + status);
        if (status == 204) throw new IllegalArgumentException("a 204 has no content type and no body: use Response.noContent()");
        boolean known = contentType == Http.APPLICATION_JSON || contentType == Http.TEXT_PLAIN || contentType == Http.TEXT_HTML;
        return new Response(status, known ? contentType : checkValue("Content-Type", contentType), body, NO_HEADERS, null);
    }

    /** @return 200 OK with {@code body} of {@code contentType} */
    public static Response ok(String contentType, byte[] body) {
        return of(200, contentType, body);
    }

    /**
     * A 200 whose body is {@code value} as JSON: {@code Response.json(todo)},
     * {@code Response.json(Map.of("page", page, "hits", 3))} gives {@code {"page":"home","hits":3}}.
     * Jackson serializes it now, on the caller's thread (a record's components, a class's public
     * fields or getters, maps, lists), so a value changed afterwards does not change the response.
     *
     * @param value what to send: a record, a {@code Map}, a {@code List}, a string or number...
     * @return 200 with {@code value} serialized as JSON by Jackson ({@link Http#APPLICATION_JSON})
     * @throws IllegalArgumentException when Jackson cannot serialize it (a server bug: the client
     *                                  gets 500)
     */
    public static Response json(Object value) {
        return ok(Http.APPLICATION_JSON, Json.write(value));
    }

    /**
     * A 200 whose body is {@code text}: {@code Response.text("Hello, World!")}, sent as those bytes
     * in UTF-8 with {@code Content-Type: text/plain; charset=UTF-8}, nothing added (no newline).
     *
     * @param text the body
     * @return 200 with {@code text} as {@link Http#TEXT_PLAIN} (UTF-8)
     */
    public static Response text(String text) {
        return ok(Http.TEXT_PLAIN, text.getBytes(StandardCharsets.UTF_8));
    }

    /** @return 200 with {@code html} as {@link Http#TEXT_HTML} (UTF-8); escape what you put in it */
    public static Response html(String html) {
        return ok(Http.TEXT_HTML, html.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The answer to a POST that made a resource: {@code Response.created("/todos/" + todo.id, todo)}
     * is {@code 201 Created} with {@code Location: /todos/7} and the todo as JSON, as
     * {@link #json} writes it.
     *
     * @param location where the new resource is, e.g. {@code /todos/7} (RFC 9110 section 10.2.2)
     * @param value    the resource as it now is, serialized by Jackson
     * @return 201 Created with {@code value} as JSON and {@code Location}
     * @throws IllegalArgumentException when Jackson cannot serialize {@code value}, or
     *                                  {@code location} holds a control character
     */
    public static Response created(String location, Object value) {
        return of(201, Http.APPLICATION_JSON, Json.write(value)).header("Location", location);
    }

    /**
     * Sends the client elsewhere: {@code Response.redirect(303, "/")} after a form's POST.
     *
     * @param status   301, 302, 303, 307 or 308 (RFC 9110 section 15.4); 303 See Other after a
     *                 POST sends a browser on with GET
     * @param location the target, e.g. {@code /todos}
     * @return the redirect, with a one-line text body naming the target
     * @throws IllegalArgumentException for another status
     */
    public static Response redirect(int status, String location) {
        if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308) {
            throw new IllegalArgumentException("a redirect is 301, 302, 303, 307 or 308, got " + status);
        }
        return of(status, Http.TEXT_PLAIN, ("see " + location + "\n").getBytes(StandardCharsets.UTF_8)).header("Location", location);
    }

    /**
     * A 200 with no content: {@code Content-Type: text/plain}, {@code Content-Length: 0}.
     *
     * @return 200 with an empty {@link Http#TEXT_PLAIN} body and {@code Content-Length: 0}; for a
     *         DELETE or PUT with nothing to return, {@link #noContent} says so more exactly
     */
    public static Response empty() {
        return of(200, Http.TEXT_PLAIN, new byte[0]);
    }

    /**
     * The answer to a DELETE or PUT that succeeded with nothing to say: {@code return Response.noContent();}.
     * It takes no {@code Content-Type} and no body; {@link #header} adds others (an {@code ETag}).
     *
     * @return 204 No Content, for a DELETE or PUT that succeeded with nothing to return: written
     *         without Content-Type, without Content-Length and without a body (RFC 9110 sections
     *         15.3.5 and 8.6: a 204 has no content, and a server must not send Content-Length in it)
     */
    public static Response noContent() {
        return new Response(204, null, new byte[0], NO_HEADERS, null);
    }

    /**
     * An error answer to return instead of throwing {@link HttpException}:
     * {@code return Response.error(404, "no todo " + id);}. The client reads
     * {@code 404 Not Found: no todo 7}, or {@code {"type":"about:blank","title":"Not Found",
     * "status":404,"detail":"no todo 7"}} (RFC 9457) when its {@code Accept} prefers JSON. The detail
     * goes to the client as it is: no secrets, no stack traces.
     *
     * @param status an error status (4xx, 5xx)
     * @param detail a short explanation for the body, or null
     * @return the error as {@link Http#TEXT_PLAIN}, body {@code "404 Not Found: detail\n"} (without
     *         {@code ": detail"} when there is none); a front end writes it as problem details
     *         instead to a client that prefers JSON ({@link #negotiated})
     */
    public static Response error(int status, String detail) {
        return new Response(status, Http.TEXT_PLAIN, errorBody(status, Http.reason(status), detail), NO_HEADERS,
            detail == null ? "" : detail);
    }

    /**
     * Chooses how an error response ({@link #error}, and those made from it: 404, 405, 503, the
     * failure policy's) is written for the client that asked: as RFC 9457 problem details
     * ({@link Http#APPLICATION_PROBLEM_JSON}, {@code {"type":"about:blank","title":"Not Found",
     * "status":404,"detail":"..."}}, title the reason phrase, no detail when there is none) when
     * the request's {@code Accept} prefers JSON to plain text ({@link Accept#prefersJson}), as
     * plain text otherwise (no {@code Accept}, {@code *}{@code /*}, a browser's). Further headers
     * ({@code Allow}, {@code Retry-After}) are kept. Every front end calls it where it writes the
     * response, with the request's {@code Accept} when its server library hands that over.
     *
     * @param accept the request's {@code Accept} field value, or null when it has none
     * @return this response, or its problem-details form
     */
    public Response negotiated(String accept) {
        if (problemDetail == null || !Accept.prefersJson(accept)) return this;
        Map<String, Object> problem = new LinkedHashMap<>();
        problem.put("type", "about:blank");
        problem.put("title", Http.reason(status));
        problem.put("status", status);
        if (!problemDetail.isEmpty()) problem.put("detail", problemDetail);
        return new Response(status, Http.APPLICATION_PROBLEM_JSON, Json.write(problem), headers, null);
    }

    /**
     * @param reason the reason phrase: {@link Http#reason}, or a server library's own where it writes
     *               the status line itself
     * @return the error body every front end sends, UTF-8: {@code "404 Not Found: detail\n"}, or
     *         {@code "404 Not Found\n"} when {@code detail} is null or empty
     */
    public static byte[] errorBody(int status, String reason, String detail) {
        String text = status + " " + reason + (detail == null || detail.isEmpty() ? "" : ": " + detail) + "\n";
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * @return a copy of this response with {@code Cache-Control: no-store}: for an answer read from a
     *         database, which changes from one request to the next, so that no cache (a proxy, a
     *         browser's heuristic freshness, RFC 9111 section 4.2.2) keeps it
     */
    public Response noStore() {
        return header("Cache-Control", "no-store");
    }

    /**
     * Adds a header: {@code Response.json(page).header("Vary", "Accept")}. A name may be
     * added more than once ({@code Set-Cookie}); they are written in the order added.
     *
     * @param name  a header name: an RFC 9110 token, not one the server writes itself
     *              ({@code Server, Date, Content-Type, Content-Length, Connection, Transfer-Encoding})
     * @param value its value: visible ASCII, spaces and tabs (no CR, LF or other control bytes:
     *              they would split the head)
     * @return a copy of this response with the header added after those it has
     * @throws IllegalArgumentException on a bad or reserved name, or a bad value
     */
    public Response header(String name, String value) {
        checkName(name);
        String[] more = Arrays.copyOf(headers, headers.length + 2);
        more[headers.length] = name;
        more[headers.length + 1] = checkValue(name, value);
        return new Response(status, contentType, body, more, problemDetail, stream);
    }

    /**
     * @param body gives the parts instead of this response's streamed body (middleware that wraps a
     *             stream: counts it, watches it)
     * @return a copy of this response whose body is {@code body}
     * @throws IllegalStateException when this response is not streamed ({@link #stream} is null)
     */
    public Response withStream(BodyStream body) {
        if (stream == null) throw new IllegalStateException("withStream on a response that is not streamed (status " + status + ")");
        return new Response(status, contentType, this.body, headers, problemDetail, java.util.Objects.requireNonNull(body, "body"));
    }

    /** @return how many further headers this response has (besides those the server writes) */
    public int headerCount() {
        return headers.length / 2;
    }

    /** @return the name of further header {@code i}, 0-based, in the order added */
    public String headerName(int i) {
        return headers[2 * i];
    }

    /** @return the value of further header {@code i}, 0-based */
    public String headerValue(int i) {
        return headers[2 * i + 1];
    }

    /**
     * Reads a header this response carries, as a filter's {@code after} may:
     * {@code response.header("Cache-Control")}. The headers the server writes itself
     * ({@code Date}, {@code Content-Length}...) are not among them.
     *
     * @param name a header name, in any case
     * @return the value of the first further header named {@code name} (any case), or null
     */
    public String header(String name) {
        for (int i = 0; i < headers.length; i += 2) {
            if (headers[i].equalsIgnoreCase(name)) return headers[i + 1];
        }
        return null;
    }

    /** @return 404 for a path no route serves (RFC 9110 section 15.5.5) */
    public static Response notFound(String path) {
        return error(404, "no such path: " + path);
    }

    /**
     * @param allow the methods the path has, e.g. {@code "GET"} or {@code "GET, POST"}
     * @return 405 with {@code Allow} for a known path asked with another method (RFC 9110 section 15.5.6)
     */
    public static Response methodNotAllowed(String method, String path, String allow) {
        return error(405, method + " is not allowed on " + path).header("Allow", allow);
    }

    /**
     * @param allow the methods of the target, e.g. {@code "GET, HEAD, OPTIONS"}
     * @return the answer to {@code OPTIONS}: 200 with {@code Allow} and no content, so
     *         {@code Content-Length: 0} (RFC 9110 section 9.3.7)
     */
    public static Response options(String allow) {
        return empty().header("Allow", allow);
    }

    /** @return 503 with {@code Retry-After: 1} (RFC 9110 sections 15.6.4, 10.2.3) and {@code detail} */
    public static Response unavailable(String detail) {
        return error(503, detail).header("Retry-After", "1");
    }

    /**
     * @param version the request's version number, e.g. {@code 9.9}
     * @return 505 for a well-formed HTTP version other than 1.0 and 1.1 (RFC 9110 section 15.6.6)
     */
    public static Response versionNotSupported(String version) {
        return error(505, "HTTP version " + version + " not supported; use HTTP/1.1");
    }

    /** @return 500 with a short body; the cause belongs in the server log, not in the response */
    public static Response internalError() {
        return error(500, "internal error (see the server log)");
    }

    private static void checkName(String name) {
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("header name is empty");
        for (int i = 0; i < name.length(); i++) {
            if (!Http.isTokenChar(name.charAt(i))) throw new IllegalArgumentException("header name is not a token: '" + name + "'");
        }
        if (SERVER_HEADERS.contains(name.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException(name + " is written by the server; a response cannot set it");
        }
    }

    private static String checkValue(String name, String value) {
        if (value == null) throw new IllegalArgumentException(name + " value is null");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if ((c < 0x20 && c != '\t') || c == 0x7f || c > 0xff) {
                throw new IllegalArgumentException(name + " value has a control or non-Latin-1 character at " + i);
            }
        }
        return value;
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("Response{").append(status).append(", ").append(contentType).append(", ")
            .append(stream != null ? "streamed" : body.length + " bytes");
        for (int i = 0; i < headers.length; i += 2) s.append(", ").append(headers[i]).append(": ").append(headers[i + 1]);
        return s.append('}').toString();
    }
}

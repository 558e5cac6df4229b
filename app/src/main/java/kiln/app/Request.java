package kiln.app;

/**
 * A request as the endpoints and handlers see it, whichever server parsed it. Each front end
 * passes its own request through a small adapter; kiln's own HTTP layer implements it directly.
 */
public interface Request {
    /** @return the method token, case-sensitive as sent: "GET", "POST"... */
    String method();

    /** @return the path part of the target, without the query and not percent-decoded, e.g. {@code /queries} */
    String path();

    /** @return the query part of the target without '?', still percent-encoded, or null when there is none */
    String rawQuery();

    /** @return the first value of header {@code name} (case-insensitive, RFC 9110 section 5.1), trimmed, or null */
    String header(String name);

    /** @return the request content (empty when there is none); do not modify it */
    byte[] body();

    /**
     * @param name a parameter of the route's path template, e.g. {@code id} of {@code /todos/{id}}
     * @return that segment of the path, percent-decoded as UTF-8
     * @throws IllegalArgumentException when the route has no such parameter
     * @throws HttpException 400 when the segment is badly percent-encoded
     */
    String pathParam(String name);

    /**
     * Reads the content as JSON with Jackson.
     *
     * @param type the class to bind to, e.g. {@code Todo.class} (public fields or a creator Jackson can use)
     * @return the value
     * @throws HttpException 400 with the parser's message when the content is empty or not such JSON
     *                       (content over {@link Limits#MAX_CONTENT} was refused with 413 before)
     */
    default <T> T json(Class<T> type) {
        return Bodies.fromJson(body(), type);
    }

    /**
     * @return the first value of query parameter {@code name}, percent-decoded as UTF-8 ("" for a
     *         bare {@code ?name}), or null when absent
     * @throws HttpException 400 on a malformed percent-escape
     */
    default String param(String name) {
        return Params.query(rawQuery(), name);
    }
}

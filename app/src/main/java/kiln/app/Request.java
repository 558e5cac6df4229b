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

    /**
     * @return the first value of query parameter {@code name}, percent-decoded as UTF-8 ("" for a
     *         bare {@code ?name}), or null when absent
     * @throws HttpException 400 on a malformed percent-escape
     */
    default String param(String name) {
        return Params.query(rawQuery(), name);
    }
}

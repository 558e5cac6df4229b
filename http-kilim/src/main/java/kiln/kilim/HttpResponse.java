package kiln.kilim;

import java.nio.charset.StandardCharsets;

import kiln.app.Bodies;
import kiln.app.Http;
import kiln.app.Reply;

/**
 * What a {@link Handler} answers: status, content type, body and at most one extra header
 * (e.g. {@code Allow} or {@code Retry-After}). The server adds {@code Server}, {@code Date},
 * {@code Content-Length} and {@code Connection} itself, in the order {@link Http} documents.
 */
public final class HttpResponse {
    final int status;
    final String contentType;
    final byte[] body;
    final String extraHeaderName;
    final String extraHeaderValue;

    private HttpResponse(int status, String contentType, byte[] body, String extraHeaderName, String extraHeaderValue) {
        this.status = status;
        this.contentType = contentType;
        this.body = body;
        this.extraHeaderName = extraHeaderName;
        this.extraHeaderValue = extraHeaderValue;
    }

    /** @return a response with {@code status}, {@code contentType} and {@code body} (not copied) */
    public static HttpResponse of(int status, String contentType, byte[] body) {
        return new HttpResponse(status, contentType, body, null, null);
    }

    /** @return 200 with {@code body} of {@code contentType} */
    public static HttpResponse ok(String contentType, byte[] body) {
        return of(200, contentType, body);
    }

    /** @return 200 with {@code value} serialized as JSON by Jackson */
    public static HttpResponse json(Object value) {
        return ok(Http.APPLICATION_JSON, Bodies.json(value));
    }

    /** @return 200 text/plain with {@code text} in UTF-8 */
    public static HttpResponse text(String text) {
        return ok(Http.TEXT_PLAIN, text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * @return an error response as every front end writes it ({@link Reply#error}): text/plain body
     *         {@code "<status> <reason>: <detail>\n"}, plus {@code Allow: GET} for 405 and
     *         {@code Retry-After: 1} for 503
     */
    public static HttpResponse error(int status, String detail) {
        return of(Reply.error(status, detail));
    }

    /** @return the shared application's reply as a response */
    public static HttpResponse of(Reply reply) {
        return new HttpResponse(reply.status, reply.contentType, reply.body, reply.extraHeader, reply.extraValue);
    }

    /** @return a copy of this response carrying one extra header, written before Content-Length */
    public HttpResponse withHeader(String name, String value) {
        return new HttpResponse(status, contentType, body, name, value);
    }

    /** @return the status code */
    public int status() {
        return status;
    }

    /** @return the body bytes; do not modify */
    public byte[] body() {
        return body;
    }
}

package kiln.jetty;

import java.io.IOException;
import java.util.AbstractList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import kiln.http.Http;
import kiln.http.HttpDate;
import kiln.http.Response;
import kiln.http.spi.RequestParser;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.eclipse.jetty.ee10.servlet.ServletContextResponse;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpHeaderValue;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.PreEncodedHttpField;

/**
 * Writes response headers onto Jetty's core header list in the contract's order ({@link Http}).
 *
 * <p>Jetty's own Server and Date headers are switched off in {@link JettyServer}. Jetty normalises
 * a known content type ({@code text/plain; charset=UTF-8} would become
 * {@code text/plain;charset=utf-8}, another length), so Content-Type is added as a field Jetty does
 * not recognise (see {@link #contentType}). Jetty's HTTP/1.1 generator writes the status line as
 * {@code HTTP/1.1} for every request and {@code Content-Length} and {@code Connection} after every
 * other field; the contract follows both, so the reply's further headers ({@code Allow},
 * {@code Retry-After}, ...) go before {@code Content-Length}.
 */
final class Responses {
    private static final HttpField SERVER = new PreEncodedHttpField(HttpHeader.SERVER, Http.SERVER);
    static final HttpField CONNECTION_CLOSE = new PreEncodedHttpField(HttpHeader.CONNECTION, HttpHeaderValue.CLOSE.asString());
    private static final ConcurrentHashMap<String, HttpField> CONTENT_TYPES = new ConcurrentHashMap<>();

    private Responses() {
    }

    /**
     * Sets a reply's status and headers, then {@code Connection: close} when an HTTP/1.0 request
     * did not ask for keep-alive. Jetty itself adds {@code Connection: keep-alive} when it did, and
     * {@code Connection: close} when an HTTP/1.1 request closes (RFC 9112 section 9.3).
     */
    static void head(HttpServletRequest request, HttpServletResponse response, Response reply) {
        response.setStatus(reply.status);
        HttpFields.Mutable fields = ServletContextResponse.getServletContextResponse(response).getHeaders();
        put(fields, reply);
        if (HttpVersion.HTTP_1_0.is(request.getProtocol()) && !asksKeepAlive(request)) fields.put(CONNECTION_CLOSE);
    }

    /**
     * Applies {@link RequestParser#refuseRequest}: answers 400, 431 or 413 and closes when the request is
     * refused, without reading its content.
     *
     * @param maxContent the most content bytes accepted ({@code --max-content})
     *
     * @return true when the request was answered here
     */
    static boolean refused(HttpServletRequest request, HttpServletResponse response, int maxContent) throws IOException {
        int fields = ServletContextRequest.getServletContextRequest(request).getHeaders().size();
        Enumeration<String> codings = request.getHeaders("Transfer-Encoding");
        String transferEncoding = codings.hasMoreElements() ? String.join(",", Collections.list(codings)) : null;
        Response refusal = RequestParser.refuseRequest(fields, request.getContentLengthLong(), transferEncoding, request.getHeader("Host"), maxContent);
        if (refusal == null) return false;
        refusal = refusal.negotiated(request.getHeader("Accept"));
        head(request, response, refusal);
        ServletContextResponse.getServletContextResponse(response).getHeaders().put(CONNECTION_CLOSE);
        if (!"HEAD".equals(request.getMethod())) response.getOutputStream().write(refusal.body);  // RFC 9110 section 9.3.2
        return true;
    }

    /**
     * @return the request's header fields, names and values alternating, for handlers that read them
     *         ({@code Last-Event-ID}): a view of Jetty's list, not a copy, since few handlers look
     */
    static List<String> headers(HttpServletRequest request) {
        return headers(ServletContextRequest.getServletContextRequest(request).getHeaders());
    }

    /** @return {@code fields}, names and values alternating: a view, not a copy */
    static List<String> headers(HttpFields fields) {
        return new AbstractList<>() {
            @Override
            public String get(int i) {
                HttpField f = fields.getField(i / 2);
                return i % 2 == 0 ? f.getName() : f.getValue();
            }

            @Override
            public int size() {
                return 2 * fields.size();
            }
        };
    }

    /**
     * Puts Server, Date, Content-Type, the reply's further headers and Content-Length, in the order
     * Jetty will write them; a 204 gets neither Content-Type nor Content-Length (RFC 9110 section 8.6).
     */
    static void put(HttpFields.Mutable fields, Response reply) {
        fields.put(SERVER);
        fields.put(HttpHeader.DATE, HttpDate.now());
        if (reply.contentType != null) fields.put(CONTENT_TYPES.computeIfAbsent(reply.contentType, Responses::contentType));
        for (int i = 0; i < reply.headerCount(); i++) fields.add(reply.headerName(i), reply.headerValue(i));
        // a streamed body has no length: Jetty chunks it (HTTP/1.1) or ends it with the connection (HTTP/1.0)
        if (reply.status != 204 && reply.stream == null) fields.put(HttpHeader.CONTENT_LENGTH, Integer.toString(reply.body.length));
    }

    /**
     * A Content-Type field that Jetty passes through verbatim: made without its {@link HttpHeader}
     * constant, so neither the servlet layer's MIME cache nor the generator recognises it.
     */
    private static HttpField contentType(String value) {
        return new PreEncodedHttpField(null, HttpHeader.CONTENT_TYPE.asString(), value);
    }

    private static boolean asksKeepAlive(HttpServletRequest request) {
        String connection = request.getHeader("Connection");
        return connection != null && new HttpField(HttpHeader.CONNECTION, connection).contains(HttpHeaderValue.KEEP_ALIVE.asString());
    }
}

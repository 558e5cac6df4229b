package kiln.comsat;

import java.io.IOException;

import javax.servlet.http.HttpServletRequest;

import kiln.http.Http;
import kiln.http.HttpDate;
import kiln.http.Response;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpHeaderValue;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.PreEncodedHttpField;

/**
 * Writes a {@link Response} as the contract's response (see {@link Http}). Fields go straight into
 * Jetty's {@link HttpFields}: {@link org.eclipse.jetty.server.Response#setContentType} would respell
 * {@code text/plain; charset=UTF-8} as Jetty's cached {@code text/plain;charset=utf-8}.
 * {@link ContractHead} puts the fields in the contract's order on the wire.
 */
final class Responses {
    private static final HttpField SERVER = new PreEncodedHttpField(HttpHeader.SERVER, Http.SERVER);
    private static final HttpField CONNECTION_CLOSE = new PreEncodedHttpField(HttpHeader.CONNECTION, HttpHeaderValue.CLOSE.asString());

    private Responses() {
    }

    /**
     * Sets the status and the head's fields but no Content-Length: for a streamed body (Jetty chunks
     * it on HTTP/1.1, and ends it with the connection on HTTP/1.0), or before {@link #send} adds it.
     *
     * @return the reply as sent: an error in the form the request's {@code Accept} prefers
     */
    static Response head(HttpServletRequest request, org.eclipse.jetty.server.Response response, Response answer) {
        Response reply = answer.status >= 400 ? answer.negotiated(request.getHeader("Accept")) : answer;
        HttpFields fields = response.getHttpFields();
        putHead(fields, reply.contentType);
        for (int i = 0; i < reply.headerCount(); i++) fields.add(reply.headerName(i), reply.headerValue(i));
        if (HttpVersion.HTTP_1_0.is(request.getProtocol()) && !fields.contains(HttpHeader.CONNECTION)) {
            fields.put(CONNECTION_CLOSE);
        }
        response.setStatus(reply.status);
        return reply;
    }

    /** @return the request's header fields, names and values alternating, for handlers that read them */
    static java.util.List<String> headers(org.eclipse.jetty.server.Request request) {
        HttpFields fields = request.getHttpFields();
        java.util.List<String> list = new java.util.ArrayList<>(2 * fields.size());
        for (HttpField f : fields) {
            list.add(f.getName());
            list.add(f.getValue());
        }
        return list;
    }

    /** Puts Server, Date and Content-Type (Content-Length comes from the body's length). */
    static void putHead(HttpFields fields, String contentType) {
        fields.put(SERVER);
        fields.put(HttpHeader.DATE, HttpDate.now());
        if (contentType != null) fields.put(HttpHeader.CONTENT_TYPE, contentType);
    }

    /** Sends {@code reply} with {@code Connection: close}; Jetty closes the connection after it. */
    static void sendAndClose(HttpServletRequest request, org.eclipse.jetty.server.Response response, Response reply) throws IOException {
        response.getHttpFields().put(CONNECTION_CLOSE);
        send(request, response, reply);
    }

    /**
     * Sends {@code reply} as the whole response, an error in the form the request's {@code Accept}
     * prefers ({@link Response#negotiated}). Jetty has already put the request's
     * {@code Connection} answer into the response's fields ({@code keep-alive} for an HTTP/1.0
     * keep-alive request, {@code close} for an HTTP/1.1 request that asked for it); an HTTP/1.0
     * request without keep-alive gets {@code Connection: close} here, since Jetty closes the
     * connection after it without saying so.
     *
     * <p>May block the calling carrier thread only while the socket's send buffer is full (Jetty
     * writes the response once its Content-Length worth of bytes is written).
     */
    static void send(HttpServletRequest request, org.eclipse.jetty.server.Response response, Response answer) throws IOException {
        Response reply = head(request, response, answer);
        // A 204 has no Content-Length (RFC 9110 section 8.6).
        if (reply.status != 204) response.setContentLength(reply.body.length);
        if (reply.body.length == 0) {
            // Writing no bytes never reaches Jetty's "Content-Length written" check: the response
            // would wait, unsent, for a fiber that has returned. Closing the stream commits it.
            response.getOutputStream().close();
        } else {
            response.getOutputStream().write(reply.body);
        }
    }
}

package kiln.jetty;

import java.nio.ByteBuffer;

import kiln.demo.Bodies;
import kiln.http.Http;
import kiln.http.Response;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * Answers the errors Jetty raises itself (a malformed request, a missing Host, an unsupported
 * version...) the kiln way instead of with Jetty's HTML page: the contract's headers, a
 * {@link Response#errorBody} text body, and {@code Connection: close}, since after a framing error the
 * next request's start is unknown (RFC 9112 section 9.6); Jetty then closes the connection.
 *
 * <p>Jetty answers a request line without a version with 505 (as HTTP/0.9); this handler turns that
 * into the contract's 400 (see {@link #HTTP_0_9_REJECTED}). A malformed version ({@code HTTP/1.x})
 * stays 505: Jetty rejects it exactly as it rejects a well-formed unknown one ({@code HTTP/9.9},
 * where 505 is right), with the same message and no request line, so nothing here tells them apart
 * (the conformance suite's deviation {@code MALFORMED_VERSION_IS_505}).
 */
final class PlainErrorHandler extends ErrorHandler {
    /**
     * Jetty's parser message (HttpParser, Jetty 12.1) for a request line that ends after the
     * target: Jetty takes it for HTTP/0.9 and answers 505. RFC 9112 section 3 makes it an invalid
     * request-line, which the contract answers with 400; this exact message is the only sign of
     * that case an error handler gets (the conformance suite pins it).
     */
    private static final String HTTP_0_9_REJECTED = "HTTP/0.9 not supported";

    /** Jetty 12.1 sends every error it raises itself through here, parser errors included. */
    @Override
    protected void generateResponse(Request request, org.eclipse.jetty.server.Response response, int code, String message, Throwable cause, Callback callback) {
        boolean noVersion = code == HttpStatus.HTTP_VERSION_NOT_SUPPORTED_505 && HTTP_0_9_REJECTED.equals(message);
        if (noVersion) response.setStatus(HttpStatus.BAD_REQUEST_400);
        byte[] body = noVersion ? body(HttpStatus.BAD_REQUEST_400, "request line without an HTTP version") : body(code, message);
        HttpFields.Mutable fields = response.getHeaders();
        fields.clear();
        Responses.put(fields, Response.of(noVersion ? HttpStatus.BAD_REQUEST_400 : code, Http.TEXT_PLAIN, body));
        fields.put(Responses.CONNECTION_CLOSE);
        response.write(true, ByteBuffer.wrap(body), callback);
    }

    /** Jetty writes the status line, so the body takes its reason phrase from Jetty too. */
    private static byte[] body(int status, String message) {
        String reason = HttpStatus.getMessage(status);
        return Response.errorBody(status, reason, message == null || message.equals(reason) ? null : message);
    }
}

package kiln.comsat;

import java.io.IOException;
import java.nio.ByteBuffer;

import javax.servlet.RequestDispatcher;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import kiln.demo.Bodies;
import kiln.http.Http;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpHeaderValue;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.handler.ErrorHandler;
import kiln.http.Response;

/**
 * Answers the errors Jetty raises itself (a malformed request, a header section too large, an
 * ambiguous URI...) the kiln way instead of with Jetty's HTML page: the contract's headers, a
 * {@link Response#errorBody} text body whose detail is Jetty's message, and {@code Connection: close},
 * since after a framing error the next request's start is unknown (RFC 9112 section 9.6).
 * Requests that reach the servlet never come here: it answers its own errors.
 */
final class JettyErrors extends ErrorHandler {

    /** Errors raised while a request exists (e.g. an ambiguous URI path). */
    @Override
    public void doError(String target, Request baseRequest, HttpServletRequest request, HttpServletResponse response) throws IOException {
        baseRequest.setHandled(true);
        int status = response.getStatus();
        byte[] body = body(status, (String) request.getAttribute(RequestDispatcher.ERROR_MESSAGE));
        HttpFields fields = baseRequest.getResponse().getHttpFields();
        fields.clear();
        Responses.putHead(fields, Http.TEXT_PLAIN);
        fields.put(HttpHeader.CONNECTION, HttpHeaderValue.CLOSE.asString());
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    /** Errors the parser hits before a request exists (e.g. a garbled request line). */
    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields fields) {
        // Jetty adds Connection: close itself here: it never keeps a connection after a bad message.
        Responses.putHead(fields, Http.TEXT_PLAIN);
        return ByteBuffer.wrap(body(status, reason));
    }

    private static byte[] body(int status, String message) {
        String reason = Http.reason(status);
        boolean noDetail = message == null || message.isEmpty() || message.equals(reason) || message.equals(HttpStatus.getMessage(status));
        return Response.errorBody(status, reason, noDetail ? null : message);
    }
}

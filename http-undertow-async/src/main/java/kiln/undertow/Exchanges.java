package kiln.undertow;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

import io.undertow.io.IoCallback;
import io.undertow.io.Sender;
import io.undertow.server.HttpServerExchange;
import io.undertow.server.protocol.http.HttpContinue;
import io.undertow.util.HeaderMap;
import io.undertow.util.HeaderValues;
import io.undertow.util.Headers;
import io.undertow.util.HttpString;
import io.undertow.util.Protocols;
import kiln.http.Http;
import kiln.http.HttpDate;
import kiln.http.Response;
import kiln.http.spi.MemoryBudget;
import kiln.http.spi.RequestParser;
import kiln.server.ClientDeadlines;
import kiln.server.RequestContent;
import org.xnio.IoUtils;

/** Sends {@link Response}s on Undertow exchanges. */
final class Exchanges {
    private static final byte[] NO_CONTENT = new byte[0];

    private Exchanges() {
    }

    /**
     * @return the request's path as sent, for {@link kiln.server.AbstractRouter#begin}: Undertow's
     *         {@code getRequestPath()} drops path parameters ({@code /plaintext;x} would be served as
     *         {@code /plaintext}, where every other front end answers 404), so the path is taken from
     *         the request URI (raw: {@code DECODE_URL} is off), minus an absolute-form's scheme and
     *         authority (RFC 9112 section 3.2.2)
     */
    static String rawPath(HttpServerExchange exchange) {
        String uri = exchange.getRequestURI();
        if (uri.startsWith("/") || uri.equals("*")) return uri;
        int authority = uri.indexOf("://");
        int slash = authority < 0 ? -1 : uri.indexOf('/', authority + 3);
        return slash < 0 ? "/" : uri.substring(slash);
    }

    /**
     * Answers a request whose HTTP version is neither 1.0 nor 1.1 with 505 and
     * {@code Connection: close} (RFC 9110 section 15.6.6): the server cannot know how the rest of
     * such a stream is framed. Only {@code HTTP/0.9} gets this far: Undertow's parser serves any
     * other unknown {@code HTTP/x.y} as HTTP/1.1 ("falling back to HTTP 1.1"), which a handler
     * cannot tell apart. Call it on the IO thread, first thing.
     *
     * @return true when the exchange was refused (answered), false when it may be served
     */
    static boolean refuseUnsupportedVersion(HttpServerExchange exchange) {
        if (exchange.isHttp11() || exchange.isHttp10()) return false;
        String protocol = exchange.getProtocol().toString();
        exchange.setPersistent(false);
        send(exchange, Response.versionNotSupported(protocol.substring(protocol.indexOf('/') + 1)).negotiated(accept(exchange)));
        return true;
    }

    /**
     * Applies {@link RequestParser#refuseRequest}: answers 413 and closes when the request's content is
     * refused, without reading it (Undertow's parser already rejects more than {@code MAX_HEADERS}
     * fields, so the field count never trips here). Call it on the IO thread, first thing.
     *
     * @return true when the exchange was refused (answered), false when it may be served
     */
    static boolean refuseContent(HttpServerExchange exchange, int maxContent) {
        HeaderValues codings = exchange.getRequestHeaders().get(Headers.TRANSFER_ENCODING);
        Response refusal = RequestParser.refuseRequest(exchange.getRequestHeaders().size(), exchange.getRequestContentLength(),
            codings == null || codings.isEmpty() ? null : String.join(",", codings), exchange.getRequestHeaders().getFirst(Headers.HOST), maxContent);
        if (refusal == null) return false;
        exchange.setPersistent(false);
        send(exchange, refusal.negotiated(accept(exchange)));
        return true;
    }

    /** The server's request memory and deadlines, which every request's content is read, and every reply written, within. */
    record Reading(MemoryBudget memory, ClientDeadlines deadlines) {
    }

    /**
     * Reads the request's content without blocking (Undertow's {@link io.undertow.io.Receiver}, part by
     * part, on the IO thread) into a {@link RequestContent}: it grows with what arrives, within the
     * server's request memory, at the minimum data rate (Undertow's {@code receiveFullBytes} would make
     * an array of the declared length before a byte of it came). {@code then} gets it once all of it
     * is in, on the IO thread (at once when there is none), with the {@link RequestContent} to
     * {@link RequestContent#release} once the handler answered (null for none). A request refused
     * meanwhile (503: no memory; 408: too slow) is answered here, and its connection closed. Only a
     * Content-Length within {@code --max-content} gets here ({@link #refuseContent}). A client that
     * leaves midway ends the exchange.
     */
    static void readContent(HttpServerExchange exchange, Reading limits, BiConsumer<byte[], RequestContent> then) {
        if (exchange.getRequestContentLength() <= 0) {
            then.accept(NO_CONTENT, null);
            return;
        }
        RequestContent content = new RequestContent(limits.memory(), limits.deadlines(), (int) exchange.getRequestContentLength(),
            reply -> exchange.getIoThread().execute(() -> refuse(exchange, reply)));
        Runnable receive = () -> exchange.getRequestReceiver().receivePartialBytes((ex, bytes, last) -> {
            if (!content.add(bytes, 0, bytes.length) || !last) return;
            byte[] body = content.finish();
            if (body != null) then.accept(body, content);
        }, (ex, failure) -> {
            content.release();
            IoUtils.safeClose(ex.getConnection());
            ex.endExchange();
        });
        if (HttpContinue.requiresContinueResponse(exchange)) {
            // the client waits for 100 Continue before it sends the content (RFC 9110 section 10.1.1)
            HttpContinue.sendContinueResponse(exchange, new IoCallback() {
                @Override
                public void onComplete(HttpServerExchange ex, Sender sender) {
                    receive.run();
                }

                @Override
                public void onException(HttpServerExchange ex, Sender sender, IOException failure) {
                    content.release();
                    IoUtils.safeClose(ex.getConnection());
                    ex.endExchange();
                }
            });
        } else {
            receive.run();
        }
    }

    /** On the IO thread: answers {@code reply} and closes the connection, unless a response began already (then only closes). */
    private static void refuse(HttpServerExchange exchange, Response reply) {
        if (exchange.isResponseStarted()) {
            IoUtils.safeClose(exchange.getConnection());
            return;
        }
        exchange.setPersistent(false);
        send(exchange, reply.negotiated(accept(exchange)));
    }

    /** @return the request's header fields, names and values alternating, for {@link kiln.server.AbstractRouter#begin} */
    static List<String> headers(HttpServerExchange exchange) {
        HeaderMap map = exchange.getRequestHeaders();
        List<String> fields = new ArrayList<>(2 * map.size());
        for (HeaderValues values : map) {
            for (String value : values) {
                fields.add(values.getHeaderName().toString());
                fields.add(value);
            }
        }
        return fields;
    }


    /**
     * Routes the request with everything Undertow parsed: method, raw path and query, header fields,
     * {@code content} and the client's address.
     */
    static <H> kiln.server.AbstractRouter.Exchange<H> begin(kiln.server.AbstractRouter<H, ?> router, HttpServerExchange exchange, byte[] content) {
        String query = exchange.getQueryString();  // "" without one: Undertow does not tell "/x" from "/x?"
        return router.begin(exchange.getRequestMethod().toString(), rawPath(exchange), query.isEmpty() ? null : query, headers(exchange),
            content, exchange.getSourceAddress());
    }

    /**
     * Sets status and headers (no Content-Length for a streamed reply: Undertow chunks it) for a
     * reply whose body the caller writes itself; an error in the form the request's {@code Accept}
     * prefers. See {@link #send} for the header order.
     */
    static void head(HttpServerExchange exchange, Response reply) {
        exchange.setStatusCode(reply.status);
        // Undertow's own phrases differ from RFC 9110's for some codes (505 "HTTP Version not supported").
        exchange.setReasonPhrase(Http.reason(reply.status));
        HeaderMap headers = exchange.getResponseHeaders();
        headers.put(Headers.SERVER, Http.SERVER);
        headers.put(Headers.DATE, HttpDate.now());
        if (reply.contentType != null) headers.put(Headers.CONTENT_TYPE, reply.contentType);
        // A 204 has no Content-Length (RFC 9110 section 8.6); Undertow writes no body for it.
        if (reply.status != 204 && reply.stream == null) headers.put(Headers.CONTENT_LENGTH, reply.body.length);
        for (int i = 0; i < reply.headerCount(); i++) headers.add(HttpString.tryFromString(reply.headerName(i)), reply.headerValue(i));
        // With ALWAYS_SET_KEEP_ALIVE off (no Connection header on HTTP/1.1 responses), Undertow no
        // longer confirms an HTTP/1.0 keep-alive either; ApacheBench -k needs that confirmation. A
        // streamed body on HTTP/1.0 ends with the connection, so it is not confirmed then.
        if (exchange.isHttp10() && exchange.isPersistent() && reply.stream == null) headers.put(Headers.CONNECTION, Headers.KEEP_ALIVE.toString());
        // Undertow says it closes for every status but 204, a response it frames without a body conduit.
        if (reply.status == 204 && !exchange.isPersistent()) headers.put(Headers.CONNECTION, Headers.CLOSE.toString());
        // Undertow writes the request's version in the status line; the contract answers every
        // request as HTTP/1.1 (RFC 9110 section 6.2: the highest version the server conforms to).
        // Persistence was settled when the request was parsed, so this changes only the status line.
        exchange.setProtocol(Protocols.HTTP_1_1);
    }

    private static String accept(HttpServerExchange exchange) {
        return exchange.getRequestHeaders().getFirst(Headers.ACCEPT);
    }

    /**
     * Sets status and headers and sends the body with Undertow's non-blocking sender, which ends
     * the exchange once written (the pipeline's answers come negotiated by {@code Accept}; the
     * refusals here are negotiated where they are made). Callable from any thread that owns the exchange (a dispatched
     * exchange belongs to whichever thread runs its task).
     *
     * <p>Header order: Undertow writes the fields in its {@link HeaderMap}'s hash-table order, not
     * in insertion order, so the header lines are the contract's but not in its order (the
     * conformance suite's deviation {@code HEADER_ORDER_HASHED}). Undertow
     * adds {@code Connection: close} itself when it will close (RFC 9112 section 9.3).
     */
    static void send(HttpServerExchange exchange, Response reply) {
        head(exchange, reply);
        exchange.getResponseSender().send(ByteBuffer.wrap(reply.body));
    }

    /**
     * As {@link #send(HttpServerExchange, Response)}, the write timed by {@code deadlines}: a client that
     * does not read is cut at the minimum response rate's deadline (Undertow's own idle timeout never
     * fires on an HTTP/1.1 connection), and the connection closed.
     */
    static void send(HttpServerExchange exchange, Response reply, ClientDeadlines deadlines) {
        head(exchange, reply);
        ClientDeadlines.Wait writing = deadlines.write(reply.body.length, () -> IoUtils.safeClose(exchange.getConnection()));
        exchange.getResponseSender().send(ByteBuffer.wrap(reply.body), new IoCallback() {
            @Override
            public void onComplete(HttpServerExchange ex, Sender sender) {
                writing.end();
                IoCallback.END_EXCHANGE.onComplete(ex, sender);
            }

            @Override
            public void onException(HttpServerExchange ex, Sender sender, IOException failure) {
                writing.end();
                IoCallback.END_EXCHANGE.onException(ex, sender, failure);
            }
        });
    }
}

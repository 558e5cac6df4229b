package kiln.bench.netty;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.util.AsciiString;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.FastThreadLocal;

/**
 * The response heads one event loop sends, with their {@code Date}: built once a second by a task
 * scheduled on that loop, read only by the connections of that loop (so nothing is shared between
 * threads, and nothing is volatile). TechEmpower's entry builds its heads per connection, each with a
 * timer of its own: 19,500 connections made 19,500 timers a second and a collector taking 37-46 % of
 * its CPU (issue 39); here they cost one task per loop, whatever the number of connections.
 *
 * <p>The heads are the ones kiln's demo sends, byte for byte, in its order (docs/front-ends.md):
 * {@code Server: kiln}, an RFC 9110 IMF-fixdate {@code Date}, {@code Content-Type},
 * {@code Content-Length}, then {@code Connection} only when needed: {@code keep-alive} for an HTTP/1.0
 * request that asked for it (ApacheBench {@code -k}), {@code close} when the connection closes after
 * the response.
 */
final class Heads {
    /** What follows a response on its connection, and the {@code Connection} header that says so. */
    enum Framing {
        /** HTTP/1.1 keep-alive, the default: no {@code Connection} header. */
        KEEP_ALIVE(null),
        /** HTTP/1.0 with {@code Connection: keep-alive}: the answer says it too (RFC 9112 section 9.3). */
        KEEP_ALIVE_HTTP_1_0("keep-alive"),
        /** The connection closes after the response. */
        CLOSE("close");

        final AsciiString connection;

        Framing(String connection) {
            this.connection = connection == null ? null : AsciiString.cached(connection);
        }
    }

    /** A response's body and content type, fixed, so that its head can be built before the request. */
    enum Body {
        HELLO("text/plain; charset=UTF-8", "HelloWorld".getBytes(StandardCharsets.US_ASCII)),
        PLAINTEXT("text/plain; charset=UTF-8", "Hello, World!".getBytes(StandardCharsets.US_ASCII)),
        /** Serialized per request (HelloHandler); its length is the one of the same message serialized here. */
        JSON("application/json", Message.json());

        final AsciiString contentType;
        final byte[] bytes;

        Body(String contentType, byte[] bytes) {
            this.contentType = AsciiString.cached(contentType);
            this.bytes = bytes;
        }
    }

    /** Header names as kiln writes them (Netty's own constants are lower-case). */
    static final AsciiString SERVER = AsciiString.cached("Server");
    static final AsciiString DATE = AsciiString.cached("Date");
    static final AsciiString CONTENT_TYPE = AsciiString.cached("Content-Type");
    static final AsciiString CONTENT_LENGTH = AsciiString.cached("Content-Length");
    static final AsciiString CONNECTION = AsciiString.cached("Connection");
    static final AsciiString KILN = AsciiString.cached("kiln");

    /** RFC 9110 section 5.6.7's IMF-fixdate, e.g. {@code Sat, 28 Nov 2026 10:57:13 GMT}. */
    private static final DateTimeFormatter IMF_FIXDATE =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private static final FastThreadLocal<Heads> OF_THIS_LOOP = new FastThreadLocal<>();

    private final Head[][] heads = new Head[Body.values().length][Framing.values().length];
    private AsciiString date;

    private Heads() {
        refresh();
    }

    /**
     * Gives every event loop of {@code group} its heads, and schedules on each the task that rebuilds
     * them at the start of every second. Returns once every loop has them.
     */
    static void install(EventLoopGroup group) {
        for (EventExecutor loop : group) {
            loop.submit(() -> {
                Heads heads = new Heads();
                OF_THIS_LOOP.set(heads);
                long toNextSecond = 1000 - System.currentTimeMillis() % 1000;
                loop.scheduleAtFixedRate(heads::refresh, toNextSecond, 1000, TimeUnit.MILLISECONDS);
            }).syncUninterruptibly();
        }
    }

    /**
     * @return the heads of the event loop this thread runs
     * @throws IllegalStateException on a thread that is not an event loop {@link #install}ed
     */
    static Heads ofThisLoop() {
        Heads heads = OF_THIS_LOOP.get();
        if (heads == null) throw new IllegalStateException("not on an event loop of the anchor: " + Thread.currentThread().getName());
        return heads;
    }

    /** @return the head for {@code body} sent with {@code framing}, with this second's {@code Date} */
    Head head(Body body, Framing framing) {
        return heads[body.ordinal()][framing.ordinal()];
    }

    /** @return this second's {@code Date} value */
    AsciiString date() {
        return date;
    }

    private void refresh() {
        date = new AsciiString(IMF_FIXDATE.format(Instant.now()));
        for (Body body : Body.values()) {
            for (Framing framing : Framing.values()) {
                heads[body.ordinal()][framing.ordinal()] = new Head(date, body.contentType, body.bytes.length, framing);
            }
        }
    }

    /**
     * One response head: the headers (for the encoder's checks of framing) and, written once, the
     * bytes they encode to, which {@link HeadEncoder} copies instead of encoding them again. TechEmpower's
     * entry caches the same bytes per connection.
     */
    static final class Head extends DefaultHttpHeaders {
        final byte[] encoded;

        Head(AsciiString date, AsciiString contentType, int contentLength, Framing framing) {
            set(SERVER, KILN);
            set(DATE, date);
            set(CONTENT_TYPE, contentType);
            set(CONTENT_LENGTH, AsciiString.of(Integer.toString(contentLength)));
            if (framing.connection != null) set(CONNECTION, framing.connection);
            StringBuilder lines = new StringBuilder(160);
            for (Iterator<Map.Entry<CharSequence, CharSequence>> it = iteratorCharSequence(); it.hasNext(); ) {
                Map.Entry<CharSequence, CharSequence> h = it.next();
                lines.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
            }
            encoded = lines.toString().getBytes(StandardCharsets.US_ASCII);
        }
    }
}

package kiln.http;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * Server-sent events ({@code text/event-stream}, WHATWG HTML Living Standard, section 9.2 "Server-sent
 * events") on a streamed response ({@link Response#stream}): what a browser's {@code EventSource} reads, and
 * {@code curl -N}.
 *
 * <pre>{@code
 * long[] seen = {ServerSentEvents.lastEventId(request, feed.lastSeq())};  // resume after a reconnect
 * return ServerSentEvents.response(events -> {
 *     for (ChangeSet<Integer, Integer> set : feed.read(seen[0], 100)) {
 *         events.event(Long.toString(set.seq()), "update", Json.writeString(set.changes()));
 *         seen[0] = set.seq();
 *     }
 *     return feed.after(seen[0]);                                          // wake me at the next commit
 * });
 * }</pre>
 *
 * <p>The response carries {@code Cache-Control: no-store} and {@code X-Accel-Buffering: no} (nginx then
 * passes each event on at once instead of buffering the response). It opens with a {@code retry:}
 * field (how long a browser waits before it reconnects) and sends a comment line,
 * {@code : keep-alive}, after 15 s without an event: proxies and load balancers close connections
 * that stay silent longer (nginx's {@code proxy_read_timeout} is 60 s), and a client that went away
 * is noticed when that write fails.
 */
public final class ServerSentEvents {
    /** The media type of an event stream. */
    public static final String CONTENT_TYPE = "text/event-stream";
    /** How long a browser waits before it reconnects, ms, sent as the stream's first field. */
    public static final long RETRY_MS = 2_000;
    private static final byte[] HEARTBEAT = ": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII);

    private ServerSentEvents() {
    }

    /**
     * What a stream of events sends: written once, run by every front end as the {@link BodyStream}
     * of the response (see its rules: never block in {@link #poll}; return the future to wait for).
     */
    @FunctionalInterface
    public interface Source {
        /**
         * Sends the events available now with {@code events}.
         *
         * @return a future that completes when there may be more, or null to end the stream
         */
        CompletableFuture<?> poll(Events events) throws Exception;
    }

    /**
     * A stream of events with its own state in one object: for a subscriber kept by the thousand
     * (a live feed's), where a {@link Source} lambda plus its captured state plus the response's wrapper
     * would be three. Subclass it and send with {@link #response(Stream)}.
     */
    public abstract static class Stream implements BodyStream {
        private final long heartbeatMs;
        private boolean started;

        /** @param heartbeatMs how long the stream may be silent before a heartbeat comment ({@code : keep-alive}), ms */
        protected Stream(long heartbeatMs) {
            if (heartbeatMs < 1) throw new IllegalArgumentException("heartbeat interval must be >= 1 ms, got " + heartbeatMs);
            this.heartbeatMs = heartbeatMs;
        }

        /** A stream with a heartbeat comment after 15 s of silence. */
        protected Stream() {
            this(15_000);
        }

        /** As {@link Source#poll}: sends the events available now; returns what to wait for, or null to end. */
        protected abstract CompletableFuture<?> next(Events events) throws Exception;

        /** Opens with the {@code retry} field, in a part of its own (the client hears at once), then {@link #next}. */
        @Override
        public final CompletableFuture<?> poll(BodyOutput out) throws Exception {
            Events events = new Events(out);
            if (!started) {
                started = true;
                events.retry(RETRY_MS);
                return CompletableFuture.completedFuture(null);
            }
            return next(events);
        }

        @Override
        public final byte[] heartbeat() {
            return HEARTBEAT;
        }

        @Override
        public final long heartbeatMillis() {
            return heartbeatMs;
        }
    }

    /**
     * The response that sends a {@link Stream}'s events, for a stream class of your own:
     * {@code return ServerSentEvents.response(new RoomStream(room, seen));}.
     *
     * @param stream the events; the front end polls it on the connection's fiber or thread
     * @return a 200 {@code text/event-stream} response that streams {@code stream}'s events, with
     *         {@code Cache-Control: no-store} and {@code X-Accel-Buffering: no}
     */
    public static Response response(Stream stream) {
        return Response.stream(200, CONTENT_TYPE, stream).noStore().header("X-Accel-Buffering", "no");
    }

    /**
     * As {@link #response(Source)}, with a heartbeat of your choosing (shorter behind a proxy that
     * closes connections silent for less than 15 s).
     *
     * @param source      the events, polled as {@link Source#poll} says
     * @param heartbeatMs how long the stream may be silent before a heartbeat comment, ms, at least 1
     * @return a 200 {@code text/event-stream} response that streams {@code source}'s events, with heartbeat
     *         comments every {@code heartbeatMs} of silence
     * @throws IllegalArgumentException when {@code heartbeatMs} is below 1
     */
    public static Response response(Source source, long heartbeatMs) {
        return response(new Stream(heartbeatMs) {
            @Override
            protected CompletableFuture<?> next(Events events) throws Exception {
                return source.poll(events);
            }
        });
    }

    /**
     * The response that sends a {@link Source}'s events: the front end calls
     * {@code source.poll(events)} once at the start, then again each time the future it returned
     * completes, until it returns null, the client leaves or the server stops. The stream opens with
     * {@code retry: 2000} and sends {@code : keep-alive} after 15 s of silence. The class comment has
     * an example; {@code kiln.server.FeedEvents} is such a source for one or several feeds.
     *
     * @param source the events, polled as {@link Source#poll} says; it never blocks
     * @return {@link #response(Source, long)} with a heartbeat comment after 15 s of silence
     */
    public static Response response(Source source) {
        return response(source, 15_000);
    }

    /**
     * The id a reconnecting {@code EventSource} sends back: the {@code id} of the last event it received.
     *
     * @param otherwise what to return when the request has no {@code Last-Event-ID}
     * @return the id, a decimal number >= 0
     * @throws HttpException 400 when {@code Last-Event-ID} is not such a number (this server's ids are)
     */
    public static long lastEventId(Request request, long otherwise) {
        String id = request.header("Last-Event-ID");
        if (id == null) return otherwise;
        id = id.strip();
        if (id.isEmpty() || id.length() > 18 || !id.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new HttpException(400, "Last-Event-ID must be the decimal id of an event of this stream, got '"
                + (id.length() > 40 ? id.substring(0, 40) + "..." : id) + "'");
        }
        return Long.parseLong(id);
    }

    /**
     * Encodes one event once, to send to many streams with {@link Events#encoded}: a live feed's
     * event goes to every subscriber, so encoding it once saves that work per subscriber.
     *
     * @return the event's bytes, as {@link Events#event} writes them (UTF-8)
     */
    public static byte[] encode(String id, String type, String data) {
        BodyOutput out = new BodyOutput();
        new Events(out).event(id, type, data);
        return java.util.Arrays.copyOf(out.array(), out.length());
    }

    /** Writes events in the {@code text/event-stream} format into one part of the stream. */
    public static final class Events {
        private final BodyOutput out;

        Events(BodyOutput out) {
            this.out = out;
        }

        /**
         * Sends one event.
         *
         * @param id   its id, which a reconnecting client sends back as {@code Last-Event-ID}; null for none
         * @param type its type ({@code EventSource.addEventListener(type, ...)}); null for "message"
         * @param data its data; each line (split at CR, LF or CRLF) becomes a {@code data:} line
         * @throws IllegalArgumentException when {@code id} or {@code type} has a CR, LF or NUL
         */
        public Events event(String id, String type, String data) {
            if (id != null) field("id", checkLine("id", id));
            if (type != null) field("event", checkLine("event type", type));
            int start = 0;
            for (int i = 0; i <= data.length(); i++) {
                char c = i < data.length() ? data.charAt(i) : '\n';
                if (c != '\n' && c != '\r') continue;
                field("data", data.substring(start, i));
                if (c == '\r' && i + 1 < data.length() && data.charAt(i + 1) == '\n') i++;
                start = i + 1;
            }
            out.write(NEWLINE);
            return this;
        }

        /** Sends an event encoded by {@link ServerSentEvents#encode}. */
        public Events encoded(byte[] event) {
            out.write(event);
            return this;
        }

        /** Sends a comment line ({@code : text}), which clients ignore: a heartbeat, a note for people reading with curl. */
        public Events comment(String text) {
            out.write(": ").write(checkLine("comment", text)).write(NEWLINE);
            return this;
        }

        /** Sets how long the client waits before reconnecting, ms. */
        public Events retry(long ms) {
            if (ms < 0) throw new IllegalArgumentException("retry must be >= 0 ms, got " + ms);
            field("retry", Long.toString(ms));
            out.write(NEWLINE);
            return this;
        }

        private void field(String name, String value) {
            out.write(name).write(": ").write(value).write(NEWLINE);
        }

        private static String checkLine(String what, String s) {
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '\n' || c == '\r' || c == 0) throw new IllegalArgumentException(what + " has a CR, LF or NUL at " + i);
            }
            return s;
        }

        private static final byte[] NEWLINE = {'\n'};
    }
}

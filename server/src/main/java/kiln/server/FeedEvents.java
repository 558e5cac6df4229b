package kiln.server;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.DbException;
import kiln.db.PrefixFeed;
import kiln.http.HttpException;
import kiln.http.Json;
import kiln.http.Request;
import kiln.http.ServerSentEvents;

/**
 * One server-sent event stream from one or more change feeds, table feeds ({@link ChangeFeed})
 * and prefix feeds ({@link PrefixFeed}) alike, with one {@code Last-Event-ID} that resumes every
 * part: a ticket page that follows an event's sold count and its expiring seat holds, say.
 *
 * <pre>{@code
 * .get("/events/{id}/live", req -> {
 *     long event = req.pathParamLong("id");
 *     return ServerSentEvents.response(FeedEvents.builder()
 *         .add(sales.prefix(event), (events, id, set) -> events.event(id, "sold", json(set)))
 *         .add(holds.prefix(event), (events, id, set) -> events.event(id, "holds", json(set)))   // expiries too
 *         .resumeFrom(req)
 *         .build());
 * })
 * }</pre>
 *
 * <h2>Ids</h2>
 * An event's id is every part's position (the commit sequence number it has delivered through),
 * joined by {@code '.'} in the order the parts were added: {@code 12.40}; with one part, just its
 * number, as a single feed's stream has it. A browser's {@code EventSource} sends the last id back as
 * {@code Last-Event-ID} when it reconnects, and {@link Builder#resumeFrom} starts each part after its
 * own number: nothing is sent twice or lost. An id of the wrong shape is a 400. A part that fell
 * further behind than its feed keeps, or whose id is ahead of its feed (from another database, or a
 * restore), gets {@code event: reload} with the stream's current id and the reason, and goes on from
 * its feed's newest set: the page reloads what it shows.
 *
 * <h2>Waiting</h2>
 * Each part waits on its own feed ({@link ChangeFeed#after}, {@link PrefixFeed#after}); a step reads
 * the parts whose feed moved ({@code readAsync}: over PostgreSQL the log is read on a read thread, the
 * carrier never waits), asking each part's feed afresh at every step (a feed's number moves at its
 * publish, its shared future completes a moment later on the wake thread), and the stream waits on a
 * new combined future of what each part waits for. A completed future is handed back only when
 * events were written or a part moved meanwhile, so the stream cannot spin; a stream whose client
 * left holds its futures until the feeds' idle renewal lets them go.
 *
 * <p>A row that expires in an expiring table reaches a table's feed as a delete whose
 * {@link ChangeSet.Change#expired()} is true: a held seat returning to the pool is an event like any other.
 */
public final class FeedEvents extends ServerSentEvents.Stream {
    /** The most change sets one part reads per step, so that one busy part does not hold the carrier long. */
    static final int SETS_PER_STEP = 64;

    /**
     * Writes the events of one change set of one part.
     *
     * @param <K> the feed's key type
     * @param <V> the feed's value type
     */
    @FunctionalInterface
    public interface Format<K, V> {
        /**
         * @param events where to write, e.g. {@code events.event(id, "update", json)}
         * @param id     the stream's id after this set: pass it as the event's id so a reconnect resumes here
         * @param set    the set to send
         */
        void write(ServerSentEvents.Events events, String id, ChangeSet<K, V> set);
    }

    private final Part<?, ?>[] parts;

    private FeedEvents(long heartbeatMs, List<Part<?, ?>> parts) {
        super(heartbeatMs);
        this.parts = parts.toArray(new Part<?, ?>[0]);
    }

    /**
     * Starts a stream of one or more feeds, one per request: add each feed with how its sets are
     * written, say where to resume, and build; {@link ServerSentEvents#response(ServerSentEvents.Stream)}
     * sends it. The class comment has the whole handler.
     *
     * @return a builder: {@link Builder#add} each feed, then {@link Builder#resumeFrom} and {@link Builder#build}
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    protected CompletableFuture<?> next(ServerSentEvents.Events events) {
        CompletableFuture<?>[] waits = new CompletableFuture<?>[parts.length];
        boolean more = false;
        for (int i = 0; i < parts.length; i++) {
            waits[i] = parts[i].step(this, events);
            more |= waits[i].isDone();
        }
        if (more) return CompletableFuture.completedFuture(null);  // a part has more already: poll again
        return waits.length == 1 ? waits[0] : CompletableFuture.anyOf(waits);  // a new one each time: never a stale complete one
    }

    /** @return the stream's id now: every part's position, joined by '.' */
    String id() {
        if (parts.length == 1) return Long.toString(parts[0].seen);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < parts.length; i++) {
            if (i > 0) s.append('.');
            s.append(parts[i].seen);
        }
        return s.toString();
    }

    /**
     * @param lastEventId a {@code Last-Event-ID}, or null
     * @param n           how many parts the stream has
     * @return each part's position, or null for none given
     * @throws HttpException 400 when it is not n non-negative numbers joined by '.'
     */
    static long[] parse(String lastEventId, int n) {
        if (lastEventId == null || lastEventId.isBlank()) return null;
        String[] fields = lastEventId.trim().split("\\.", -1);
        if (fields.length != n) throw badId(lastEventId, n);
        long[] at = new long[n];
        for (int i = 0; i < n; i++) {
            // as ServerSentEvents.lastEventId takes one: 1 to 18 decimal digits
            String f = fields[i];
            if (f.isEmpty() || f.length() > 18 || !f.chars().allMatch(c -> c >= '0' && c <= '9')) throw badId(lastEventId, n);
            at[i] = Long.parseLong(f);
        }
        return at;
    }

    private static HttpException badId(String id, int n) {
        String shape = n == 1 ? "the decimal id" : n + " decimal numbers joined by '.', the id,";
        String shown = id.length() > 64 ? id.substring(0, 64) + "..." : id;
        return new HttpException(400, "Last-Event-ID must be " + shape + " of an event of this stream, got '" + shown + "'");
    }

    /** Builds a {@link FeedEvents}. */
    public static final class Builder {
        private final List<Part<?, ?>> parts = new ArrayList<>();
        private long[] resume;
        private String resumeText;
        private long heartbeatMs = 15_000;

        private Builder() {
        }

        /** Adds a table's feed: every committed write to the table is a set. */
        public <K, V> Builder add(ChangeFeed<K, V> feed, Format<K, V> format) {
            parts.add(new Part<>(format, feed::lastSeq, feed::after,
                seq -> feed.readAsync(seq, SETS_PER_STEP).thenApply(sets -> new Read<>(sets, seq))));
            return this;
        }

        /** Adds a prefix feed: the writes that touch its prefix ({@link ChangeFeed#prefix}). */
        public <K, V> Builder add(PrefixFeed<K, V> feed, Format<K, V> format) {
            parts.add(new Part<>(format, feed::lastSeq, feed::after,
                seq -> feed.readAsync(seq, SETS_PER_STEP).thenApply(c -> new Read<>(c.sets(), c.through()))));
            return this;
        }

        /** Resumes after the request's {@code Last-Event-ID}, when it has one; else the stream starts at each feed's newest set. */
        public Builder resumeFrom(Request request) {
            return resumeFrom(request.header("last-event-id"));
        }

        /** Resumes after {@code lastEventId} (an id the stream sent; null or blank for none). */
        public Builder resumeFrom(String lastEventId) {
            this.resumeText = lastEventId;
            return this;
        }

        /** Sends a comment after this many ms without an event (default 15,000): proxies keep the connection, a vanished client shows. */
        public Builder heartbeatMs(long ms) {
            this.heartbeatMs = ms;
            return this;
        }

        /**
         * @return the stream, each part at its resumed position or its feed's newest
         * @throws HttpException 400 for a {@code Last-Event-ID} of the wrong shape
         * @throws IllegalStateException without a part
         */
        public FeedEvents build() {
            if (parts.isEmpty()) throw new IllegalStateException("add a feed first");
            resume = parse(resumeText, parts.size());
            for (int i = 0; i < parts.size(); i++) {
                Part<?, ?> p = parts.get(i);
                p.seen = resume == null ? p.lastSeq.getAsLong() : resume[i];
                // a resumed part reads at once: what it missed, or the feed's word that its id is
                // older than the feed keeps or ahead of it (a reload), rather than waiting for a commit
                if (resume != null) p.readNow();
            }
            return new FeedEvents(heartbeatMs, new ArrayList<>(parts));
        }
    }

    /**
     * What one read of a part gave: its sets, and the position it read through (a prefix feed's
     * read passes the sets of other prefixes).
     */
    private record Read<K, V>(List<ChangeSet<K, V>> sets, long through) {
    }

    /** One feed of the stream: where it is, and the wait or read under way. */
    private static final class Part<K, V> {
        final Format<K, V> format;
        final LongSupplier lastSeq;
        final LongFunction<? extends CompletableFuture<Void>> after;
        final LongFunction<CompletableFuture<Read<K, V>>> read;
        long seen;
        /** A read of what came after {@code seen}, or null. */
        CompletableFuture<Read<K, V>> reading;

        Part(Format<K, V> format, LongSupplier lastSeq, LongFunction<? extends CompletableFuture<Void>> after,
             LongFunction<CompletableFuture<Read<K, V>>> read) {
            this.format = format;
            this.lastSeq = lastSeq;
            this.after = after;
            this.read = read;
        }

        /** Starts a read after {@link #seen}. */
        void readNow() {
            reading = read.apply(seen);
        }

        /**
         * One step: writes what the part's feed has after {@link #seen}.
         *
         * @return what the part waits on: complete when the feed has more already (after events
         *         were written, or when the feed moved during the step), else not complete
         */
        CompletableFuture<?> step(FeedEvents stream, ServerSentEvents.Events events) {
            for (int reads = 0; ; ) {
                if (reading != null) {
                    if (!reading.isDone()) return reading;
                    CompletableFuture<Read<K, V>> done = reading;
                    reading = null;
                    Read<K, V> got;
                    try {
                        got = done.join();
                    } catch (CompletionException e) {
                        if (!(e.getCause() instanceof DbException.Expired expired)) throw e;
                        seen = lastSeq.getAsLong();
                        events.event(stream.id(), "reload", reason(expired));
                        return after.apply(seen);
                    }
                    for (ChangeSet<K, V> set : got.sets()) {
                        seen = set.seq();
                        format.write(events, stream.id(), set);
                    }
                    seen = Math.max(seen, got.through());
                    if (!got.sets().isEmpty()) return after.apply(seen);
                    // nothing for this part (a prefix feed passes other prefixes' sets): wait from where the read got to
                }
                // asked again at every step, not kept from the last: a feed's number moves at its publish,
                // its shared future completes a moment later on the wake thread
                CompletableFuture<Void> waiting = after.apply(seen);
                if (!waiting.isDone()) return waiting;
                if (++reads > 2) return after.apply(Math.max(seen, lastSeq.getAsLong()));  // woken twice for nothing: wait for the feed to move
                readNow();  // done at once unless the log must be read
            }
        }
    }

    private static String reason(DbException.Expired expired) {
        return Json.writeString(Map.of("reason", expired.getMessage()));
    }
}

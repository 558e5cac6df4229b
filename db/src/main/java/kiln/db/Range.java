package kiln.db;

import java.util.Objects;

/**
 * Which rows of a table a {@link Table#range} reads, in which direction, how many per page, and
 * where the page starts: FoundationDB's {@code getRange(begin, end, limit, reverse)} with a
 * continuation, in the words of Guava's ranges.
 *
 * <pre>{@code
 * Range<Tuple> newest = Range.prefix(Tuple.of(room)).limit(20);                 // one room, 20 rows a page
 * Page<Tuple, Message> page = messages.range(txn, newest.after(req.param("after")));
 * // page.rows(); page.continuation() is the next page's ?after=, null after the last page
 * }</pre>
 *
 * <p>Immutable: each modifier returns a new range.
 *
 * @param <K> the table's key type
 */
public final class Range<K> {
    /** The most rows a page may hold. */
    public static final int MAX_LIMIT = 10_000;
    /** Rows per page when no {@link #limit} is given. */
    public static final int DEFAULT_LIMIT = 100;

    final K prefix;
    final K begin;
    final boolean beginInclusive;
    final K end;
    final boolean endInclusive;
    final boolean reverse;
    final int limit;
    final String after;

    private Range(K prefix, K begin, boolean beginInclusive, K end, boolean endInclusive, boolean reverse, int limit, String after) {
        this.prefix = prefix;
        this.begin = begin;
        this.beginInclusive = beginInclusive;
        this.end = end;
        this.endInclusive = endInclusive;
        this.reverse = reverse;
        this.limit = limit;
        this.after = after;
    }

    /**
     * The whole table (or index), in key order: {@code Range.<Long>all().limit(50)}.
     *
     * @return every row
     */
    public static <K> Range<K> all() {
        return new Range<>(null, null, true, null, true, false, DEFAULT_LIMIT, null);
    }

    /**
     * The rows under a key prefix: {@code Range.prefix(Tuple.of(room))} is one room's messages,
     * keyed {@code (room, id)}, in id order. With {@link Codec#TUPLE} keys a prefix covers whole
     * elements: {@code Tuple.of("lobby")} covers {@code ("lobby", 7)}, not {@code ("lobbyist", 7)}.
     * With {@link Codec#STRING} keys it is a prefix of the string's UTF-8 bytes.
     *
     * @param prefix a key, not null
     * @return the rows whose key's encoding starts with {@code prefix}'s (with {@link Codec#TUPLE}
     *         keys: {@code prefix} and every tuple that extends it; see {@link Codec#extendsPrefix})
     */
    public static <K> Range<K> prefix(K prefix) {
        return new Range<>(Objects.requireNonNull(prefix, "prefix"), null, true, null, true, false, DEFAULT_LIMIT, null);
    }

    /**
     * The rows between two keys, both included: {@code Range.closed(1L, 100L)}. Keys compare as
     * their encodings do (unsigned bytes): in number order for {@link Codec#LONG} and
     * {@link Codec#INT}, in tuple order for {@link Codec#TUPLE}.
     *
     * @param begin the first key, not null
     * @param end   the last key, not null
     * @return the rows with {@code begin <= key <= end}
     */
    public static <K> Range<K> closed(K begin, K end) {
        return new Range<>(null, Objects.requireNonNull(begin, "begin"), true, Objects.requireNonNull(end, "end"), true, false, DEFAULT_LIMIT, null);
    }

    /**
     * The rows from one key up to another, the first included, the second not: events from now on,
     * keyed {@code (startsAt, id)}, are {@code Range.closedOpen(Tuple.of(now), Tuple.of(Long.MAX_VALUE))}.
     *
     * @param begin the first key, not null
     * @param end   the key the range stops before, not null
     * @return the rows with {@code begin <= key < end}
     */
    public static <K> Range<K> closedOpen(K begin, K end) {
        return new Range<>(null, Objects.requireNonNull(begin, "begin"), true, Objects.requireNonNull(end, "end"), false, false, DEFAULT_LIMIT, null);
    }

    /**
     * The rows from a key on, to the table's end.
     *
     * @param begin the first key, not null
     * @return the rows with {@code key >= begin}
     */
    public static <K> Range<K> atLeast(K begin) {
        return new Range<>(null, Objects.requireNonNull(begin, "begin"), true, null, true, false, DEFAULT_LIMIT, null);
    }

    /**
     * The rows after a key, to the table's end.
     *
     * @param begin the key the range starts after, not null
     * @return the rows with {@code key > begin}
     */
    public static <K> Range<K> greaterThan(K begin) {
        return new Range<>(null, Objects.requireNonNull(begin, "begin"), false, null, true, false, DEFAULT_LIMIT, null);
    }

    /**
     * The rows from the table's start up to a key, included.
     *
     * @param end the last key, not null
     * @return the rows with {@code key <= end}
     */
    public static <K> Range<K> atMost(K end) {
        return new Range<>(null, null, true, Objects.requireNonNull(end, "end"), true, false, DEFAULT_LIMIT, null);
    }

    /**
     * The rows from the table's start up to a key, not included.
     *
     * @param end the key the range stops before, not null
     * @return the rows with {@code key < end}
     */
    public static <K> Range<K> lessThan(K end) {
        return new Range<>(null, null, true, Objects.requireNonNull(end, "end"), false, false, DEFAULT_LIMIT, null);
    }

    /**
     * The same rows in the other direction: newest first, for keys that grow with time
     * ({@code Range.prefix(Tuple.of(room)).reverse()}).
     *
     * @return the same rows, last key first
     */
    public Range<K> reverse() {
        return new Range<>(prefix, begin, beginInclusive, end, endInclusive, !reverse, limit, after);
    }

    /**
     * How many rows a page holds at most: {@code .limit(req.intParam("limit", 20, 1, 100))}. Only the
     * range's last page holds fewer (its continuation is null).
     *
     * @param rows the most rows a page holds, 1..{@value #MAX_LIMIT} (default {@value #DEFAULT_LIMIT})
     * @return this range with that limit
     * @throws IllegalArgumentException outside 1..{@value #MAX_LIMIT}
     */
    public Range<K> limit(int rows) {
        if (rows < 1 || rows > MAX_LIMIT) throw new IllegalArgumentException("limit must be 1.." + MAX_LIMIT + ", got " + rows);
        return new Range<>(prefix, begin, beginInclusive, end, endInclusive, reverse, rows, after);
    }

    /**
     * Where the page starts: after the key a previous page ended on, as the client handed its token
     * back, {@code .after(req.param("after"))}; the first page for null.
     *
     * @param continuation a previous page's {@link Page#continuation()} of this same listing (the
     *                     table or index, prefix and direction), as the client handed it back (e.g.
     *                     {@code ?after=...}), or null or empty for the first page
     * @return the page after it: after the token's key and within this range's bounds, which may
     *         have moved since the token was made (a range from now); a token that this database did
     *         not make for this listing is refused by {@link Table#range} with
     *         {@link DbException.BadContinuation}
     */
    public Range<K> after(String continuation) {
        String token = continuation == null || continuation.isEmpty() ? null : continuation;
        return new Range<>(prefix, begin, beginInclusive, end, endInclusive, reverse, limit, token);
    }

    /** @return true when rows come last key first */
    public boolean isReverse() {
        return reverse;
    }

    /** @return the most rows per page */
    public int limit() {
        return limit;
    }

    @Override
    public String toString() {
        String what = prefix != null ? "prefix " + prefix
            : (begin == null ? "(-inf" : (beginInclusive ? "[" : "(") + begin) + ", " + (end == null ? "+inf)" : end + (endInclusive ? "]" : ")"));
        return "Range(" + what + (reverse ? ", reverse" : "") + ", limit " + limit + (after != null ? ", after a continuation" : "") + ")";
    }
}

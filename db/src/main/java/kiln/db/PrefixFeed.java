package kiln.db;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The changes of a fed table under one key prefix — a room's messages ({@code Tuple.of(room)}), one
 * row (its whole key) — as etcd watches a key range: subscribers of a prefix wait on a future that only a
 * commit touching that prefix completes, so a commit wakes the subscribers of the prefixes it touched and
 * no others. Obtain one with {@link ChangeFeed#prefix}; it is a small handle (make one per subscriber).
 *
 * <pre>{@code
 * PrefixFeed<Tuple, Message> room = feed.prefix(Tuple.of("lobby"));
 * long seen = room.lastSeq();
 * while (true) {
 *     await(room.after(seen));                           // woken only by the lobby's commits
 *     PrefixFeed.Changes<Tuple, Message> c = room.read(seen, 100);
 *     for (ChangeSet<Tuple, Message> set : c.sets()) send(set);   // only the lobby's changes
 *     seen = c.through();
 * }
 * }</pre>
 *
 * <h2>Cost</h2>
 * Subscribers of one prefix share one group: a future, the newest matching sequence number and the
 * last {@value PrefixGroups#RECENT} matching change sets. At each commit the writer thread encodes each
 * changed key once and looks up each distinct prefix length registered (a hash lookup each), so a
 * commit costs in proportion to its changes and to the subscribers it wakes, not to the subscribers of other
 * prefixes. A subscriber that resumes from further back than its group keeps reads the feed's log and
 * filters it. Groups nobody waits on are dropped after a minute without use.
 *
 * <p>Sequence numbers are the feed's ({@link ChangeSet#seq}): a {@code Last-Event-ID} works for a
 * prefix as for the whole feed.
 *
 * @param <K> the table's key type; the prefix is one of its values, compared by its encoding (with
 *            {@link Codec#TUPLE} keys, by whole elements: {@link Codec#extendsPrefix})
 * @param <V> the table's value type
 */
public final class PrefixFeed<K, V> {
    /** The table's whole feed, as this one reads it. */
    private final Source<K, V> feed;
    /** Runs a read query, for {@link #readAsync}'s reads of the log: the feed's. */
    private final Reads reads;
    private final String table;
    private final PrefixGroups<K, V> groups;
    private final K prefix;
    private final ByteBuffer bytes;
    private volatile PrefixGroups.Group<K, V> group;

    /**
     * What a prefix feed reads of its table's whole feed: {@link ChangeFeed}'s, which makes it (and
     * gives it this, not itself).
     */
    interface Source<K, V> {
        /** @return the newest published sequence number ({@link ChangeFeed#lastSeq}) */
        long lastSeq();

        /** @return the sets after {@code seq} as {@link ChangeFeed#read} gives them, reading the log in {@code txn} when it must (in a read of its own when null) */
        List<ChangeSet<K, V>> read(Txn txn, long seq, int max);

        /**
         * Catches up with the log when {@code seq} is ahead of what this process published.
         *
         * @throws DbException.Expired when the log does not hold {@code seq} either
         */
        void catchUpTo(Txn txn, long seq);
    }

    PrefixFeed(Source<K, V> feed, Reads reads, String table, PrefixGroups<K, V> groups, K prefix, byte[] bytes) {
        this.feed = feed;
        this.reads = reads;
        this.table = table;
        this.groups = groups;
        this.prefix = prefix;
        this.bytes = ByteBuffer.wrap(bytes);
        this.group = groups.group(this.bytes);
    }

    /** @return the prefix */
    public K prefix() {
        return prefix;
    }

    /**
     * Where a new subscriber of the prefix starts: {@code long seen = room.lastSeq();}, then
     * {@link #after}{@code (seen)} and {@link #read}{@code (seen, n)}.
     *
     * @return the newest sequence number that may hold a change under the prefix: a new subscriber starts
     *         from it (a change set older than its group is counted as possibly matching)
     */
    public long lastSeq() {
        return current().lastSeq;
    }

    /**
     * Waits, without a thread, for the next commit that touches the prefix (commits to other prefixes
     * do not wake it): {@code await(room.after(seen))}, or the future a stream's {@code poll} returns.
     *
     * @param seq a sequence number the subscriber has seen ({@link Changes#through} of its last read)
     * @return a future that completes once a change set newer than {@code seq} touches the prefix: at
     *         once when there may be one already; else the one future every subscriber of the prefix
     *         shares, completed on the database's wake thread. It may also complete with nothing new (after a
     *         minute without a commit there): read, then wait again.
     */
    public QueryFuture<Void> after(long seq) {
        PrefixGroups.Group<K, V> g = current();
        g.touch();
        QueryFuture<Void> f = g.next;
        if (g.lastSeq > seq || f.isDone()) {
            if (f.isCompletedExceptionally()) return f;
            return QueryFuture.succeeded(null);
        }
        return f;
    }

    /**
     * The change sets after {@code seq} that touch the prefix, each holding only its changes under the
     * prefix, oldest first.
     *
     * @param max the most sets to return, >= 1
     * @return the sets, and the sequence number the read covered up to: wait with {@code after(through)}
     * @throws DbException.Expired as {@link ChangeFeed#read}, when {@code seq} is older than the feed
     *         keeps or newer than its log holds
     */
    public Changes<K, V> read(long seq, int max) {
        return read(null, seq, max);
    }

    /**
     * {@link #read} without a round trip on the calling thread, for fiber and event-loop code, as
     * {@link ChangeFeed#readAsync}: complete at once when the prefix's group keeps the sets (a subscriber
     * that keeps up); else the feed's sets are read as a read query is (on PostgreSQL on a read
     * thread), and the future completes there.
     *
     * @return what {@link #read} returns; failed with {@link DbException.Expired} where it throws it
     */
    public QueryFuture<Changes<K, V>> readAsync(long seq, int max) {
        if (max < 1) throw new IllegalArgumentException("max must be >= 1, got " + max);
        if (seq <= feed.lastSeq()) {
            Changes<K, V> recent = recent(seq, max);
            if (recent != null) return QueryFuture.succeeded(recent);
        }
        return reads.read(txn -> read(txn, seq, max));
    }

    /** {@link #read}, reading the feed's log (when it must) in {@code txn}, or in reads of its own when it is null. */
    private Changes<K, V> read(Txn txn, long seq, int max) {
        if (max < 1) throw new IllegalArgumentException("max must be >= 1, got " + max);
        if (seq > feed.lastSeq()) feed.catchUpTo(txn, seq);  // as ChangeFeed#read: from another server, or refused
        Changes<K, V> recent = recent(seq, max);
        if (recent != null) return recent;
        // from further back than the group keeps: the feed's sets, filtered
        List<ChangeSet<K, V>> out = new ArrayList<>();
        long through = seq;
        long last = feed.lastSeq();
        while (out.size() < max && through < last) {
            List<ChangeSet<K, V>> sets = feed.read(txn, through, 256);
            if (sets.isEmpty()) break;
            for (ChangeSet<K, V> set : sets) {
                ChangeSet<K, V> mine = groups.filter(set, bytes);
                if (mine != null) out.add(mine);
                through = set.seq();
                if (out.size() == max) break;
            }
        }
        return new Changes<>(out, through);
    }

    /** @return the sets after {@code seq} that the prefix's group keeps, or null when it does not keep them all */
    private Changes<K, V> recent(long seq, int max) {
        PrefixGroups.Group<K, V> g = current();
        g.touch();
        List<ChangeSet<K, V>> sets = new ArrayList<>();
        long through = groups.recent(g, seq, max, sets);
        return through < 0 ? null : new Changes<>(sets, through);
    }

    /** @return the group of the prefix, found again when it was dropped while unused */
    private PrefixGroups.Group<K, V> current() {
        PrefixGroups.Group<K, V> g = group;
        if (g.dropped) group = g = groups.group(bytes);
        return g;
    }

    /**
     * What one {@link #read} gives.
     *
     * @param sets    the change sets that touch the prefix, each with only its changes under it
     * @param through the sequence number the read covered up to, at least the last set's: the
     *                subscriber's new position
     */
    public record Changes<K, V>(List<ChangeSet<K, V>> sets, long through) {
    }

    @Override
    public String toString() {
        return "PrefixFeed(" + table + ", " + prefix + ")";
    }
}

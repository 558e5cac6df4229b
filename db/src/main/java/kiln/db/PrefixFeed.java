package kiln.db;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

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
    private final ChangeFeed<K, V> feed;
    private final PrefixGroups<K, V> groups;
    private final K prefix;
    private final ByteBuffer bytes;
    private volatile PrefixGroups.Group<K, V> group;

    PrefixFeed(ChangeFeed<K, V> feed, PrefixGroups<K, V> groups, K prefix, byte[] bytes) {
        this.feed = feed;
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
            PrefixGroups.Group<K, V> g = current();
            g.touch();
            Changes<K, V> recent = groups.recent(g, seq, max);
            if (recent != null) return QueryFuture.succeeded(recent);
        }
        return feed.reads().read(txn -> read(txn, seq, max));
    }

    /** {@link #read}, reading the feed's log (when it must) in {@code txn}, or in reads of its own when it is null. */
    private Changes<K, V> read(Txn txn, long seq, int max) {
        if (max < 1) throw new IllegalArgumentException("max must be >= 1, got " + max);
        if (seq > feed.lastSeq()) feed.catchUpTo(txn, seq);  // as ChangeFeed#read: from another server, or refused
        PrefixGroups.Group<K, V> g = current();
        g.touch();
        Changes<K, V> recent = groups.recent(g, seq, max);
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
        return "PrefixFeed(" + feed.table().name() + ", " + prefix + ")";
    }
}

/**
 * The groups of a feed's {@link PrefixFeed} subscribers, by prefix bytes, and the writer's dispatch of
 * each published change set to the groups whose prefixes it touches. Guarded by itself.
 */
final class PrefixGroups<K, V> {
    /** Matching change sets a group keeps for its subscribers. */
    static final int RECENT = 32;

    private final Codec<K> keys;
    /** Encodes a changed key, into bytes of its own (the table's key codec). */
    private final java.util.function.Function<K, byte[]> encode;
    /** The feed's newest published sequence number. */
    private final java.util.function.LongSupplier lastSeq;
    private final Map<ByteBuffer, Group<K, V>> groups = new HashMap<>();
    /** The distinct prefix lengths of {@link #groups}, with how many groups have each. */
    private final TreeMap<Integer, Integer> lengths = new TreeMap<>();
    /** The newest sequence number dispatched: every set up to it reached the groups that existed then. */
    private long dispatched;
    /** System.nanoTime() of the last {@link #idle} look. */
    private long idleAt = System.nanoTime();

    PrefixGroups(Codec<K> keys, java.util.function.Function<K, byte[]> encode, java.util.function.LongSupplier lastSeq) {
        this.keys = keys;
        this.encode = encode;
        this.lastSeq = lastSeq;
    }

    /** The subscribers of one prefix. */
    static final class Group<K, V> {
        final ByteBuffer prefix;
        /** Newest sequence number that may touch the prefix (the feed's at the group's start). */
        volatile long lastSeq;
        volatile QueryFuture<Void> next = new QueryFuture<>();
        /** System.nanoTime() when {@link #next} was made. */
        long nextMadeAt = System.nanoTime();
        volatile long usedAt = System.nanoTime();
        /** Every set after {@link #completeFrom} that touches the prefix, filtered, oldest first; at most {@link #RECENT}. */
        final ArrayDeque<ChangeSet<K, V>> recent = new ArrayDeque<>();
        long completeFrom;
        volatile boolean dropped;

        Group(ByteBuffer prefix, long from) {
            this.prefix = prefix;
            this.lastSeq = from;
            this.completeFrom = from;
        }

        void touch() {
            usedAt = System.nanoTime();
        }

        QueryFuture<Void> renew() {
            QueryFuture<Void> waiting = next;
            next = new QueryFuture<>();
            nextMadeAt = System.nanoTime();
            return waiting;
        }
    }

    synchronized Group<K, V> group(ByteBuffer prefix) {
        Group<K, V> g = groups.get(prefix);
        if (g == null) {
            // from the feed's newest set: one published but not yet dispatched may touch the prefix
            g = new Group<>(prefix, Math.max(dispatched, lastSeq.getAsLong()));
            groups.put(prefix, g);
            lengths.merge(prefix.remaining(), 1, Integer::sum);
        }
        return g;
    }

    /** @return the group's kept sets after {@code seq}, or null when it does not keep all of them */
    synchronized PrefixFeed.Changes<K, V> recent(Group<K, V> g, long seq, int max) {
        if (seq < g.completeFrom) return null;
        List<ChangeSet<K, V>> out = new ArrayList<>();
        for (ChangeSet<K, V> set : g.recent) {
            if (set.seq() <= seq) continue;
            out.add(set);
            if (out.size() == max) return new PrefixFeed.Changes<>(out, set.seq());
        }
        return new PrefixFeed.Changes<>(out, Math.max(seq, dispatched));
    }

    /**
     * After the sets were published, under their feed's lock (so in publish order): gives each set's
     * changes to the groups of the prefixes they fall under, and renews those groups' futures.
     *
     * @param published the sets, oldest first; not empty
     * @return the futures of the groups woken, for the caller to complete once it holds no lock
     */
    List<QueryFuture<Void>> dispatch(List<ChangeSet<K, V>> published) {
        List<QueryFuture<Void>> woken = List.of();
        synchronized (this) {
            if (!groups.isEmpty()) {
                Map<Group<K, V>, List<ChangeSet.Change<K, V>>> hits = new HashMap<>();
                for (ChangeSet<K, V> set : published) {
                    hits.clear();
                    for (ChangeSet.Change<K, V> c : set.changes()) {
                        byte[] key = encode.apply(c.key());
                        for (int length : lengths.keySet()) {
                            if (length > key.length) break;
                            Group<K, V> g = groups.get(ByteBuffer.wrap(key, 0, length));
                            if (g != null && keys.extendsPrefix(ByteBuffer.wrap(key), length)) {
                                hits.computeIfAbsent(g, x -> new ArrayList<>()).add(c);
                            }
                        }
                    }
                    for (Map.Entry<Group<K, V>, List<ChangeSet.Change<K, V>>> hit : hits.entrySet()) {
                        Group<K, V> g = hit.getKey();
                        g.recent.addLast(new ChangeSet<>(set.seq(), set.committedAt(), List.copyOf(hit.getValue())));
                        if (g.recent.size() > RECENT) g.completeFrom = g.recent.removeFirst().seq();
                        g.lastSeq = set.seq();
                        if (woken.isEmpty()) woken = new ArrayList<>();
                        woken.add(g.renew());
                    }
                }
            }
            dispatched = published.get(published.size() - 1).seq();
        }
        return woken;
    }

    /** @return {@code set} with only its changes under {@code prefix}, or null when it has none */
    ChangeSet<K, V> filter(ChangeSet<K, V> set, ByteBuffer prefix) {
        List<ChangeSet.Change<K, V>> mine = null;
        int length = prefix.remaining();
        for (ChangeSet.Change<K, V> c : set.changes()) {
            byte[] key = encode.apply(c.key());
            if (key.length >= length && ByteBuffer.wrap(key, 0, length).equals(prefix) && keys.extendsPrefix(ByteBuffer.wrap(key), length)) {
                if (mine == null) mine = new ArrayList<>();
                mine.add(c);
            }
        }
        return mine == null ? null : new ChangeSet<>(set.seq(), set.committedAt(), List.copyOf(mine));
    }

    /**
     * On the writer thread while it has no work: renews the futures of groups without a commit for
     * {@code nanos} (their subscribers, woken, find nothing and wait again; subscribers that left let go),
     * and drops groups unused for as long that nobody waits on.
     *
     * @return the futures renewed, for the caller to complete
     */
    List<QueryFuture<Void>> idle(long nanos) {
        List<QueryFuture<Void>> renewed = new ArrayList<>();
        long now = System.nanoTime();
        synchronized (this) {
            if (now - idleAt < Math.min(nanos, 1_000_000_000L)) return renewed;  // the writer idles every 50 ms: look once a second
            idleAt = now;
            for (Iterator<Group<K, V>> it = groups.values().iterator(); it.hasNext(); ) {
                Group<K, V> g = it.next();
                if (now - g.usedAt >= nanos && g.next.getNumberOfDependents() == 0) {
                    g.dropped = true;
                    it.remove();
                    lengths.computeIfPresent(g.prefix.remaining(), (l, n) -> n == 1 ? null : n - 1);
                } else if (now - g.nextMadeAt >= nanos) {
                    renewed.add(g.renew());
                }
            }
        }
        return renewed;
    }

    /** @return how many groups there are; for tests */
    synchronized int size() {
        return groups.size();
    }

    /** At {@link Db#close}: fails every group's future with {@code closed}. */
    void close(DbException.Closed closed) {
        List<QueryFuture<Void>> all = new ArrayList<>();
        synchronized (this) {
            for (Group<K, V> g : groups.values()) all.add(g.next);
        }
        for (QueryFuture<Void> f : all) f.fail(closed);
    }
}

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

    /**
     * Adds the group's kept sets after {@code seq} to {@code out}, at most {@code max}.
     *
     * @return the sequence number they cover up to, or -1 when the group does not keep every set
     *         after {@code seq} (then {@code out} is left as it was)
     */
    synchronized long recent(Group<K, V> g, long seq, int max, List<ChangeSet<K, V>> out) {
        if (seq < g.completeFrom) return -1;
        int added = 0;
        for (ChangeSet<K, V> set : g.recent) {
            if (set.seq() <= seq) continue;
            out.add(set);
            if (++added == max) return set.seq();
        }
        return Math.max(seq, dispatched);
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

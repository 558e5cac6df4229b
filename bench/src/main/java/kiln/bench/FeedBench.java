package kiln.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.PrefixFeed;
import kiln.db.Table;
import kiln.db.Tuple;

/**
 * {@code make bench-feeds}: the CPU a commit to one room costs the process while other rooms have
 * subscribers, from 0 to 10,000 of them spread over 999 other rooms, the committed room having 10.
 * Two ways of following a room, side by side in one run: each subscriber waits on its room's
 * {@link PrefixFeed} (woken only by that room's commits), or on the table's whole {@link ChangeFeed}
 * and filters every change set (how {@code /worlds/{id}/events} worked before prefix feeds).
 *
 * <p>A subscriber is a callback that re-arms itself, as a fiber's or a virtual thread's wait does:
 * woken, it reads what is new for it, counts it, and waits again. CPU is the process's
 * ({@code OperatingSystemMXBean.getProcessCpuTime}) over {@value #COMMITS} durable commits of one
 * message each to the committed room, one at a time, after {@value #WARMUP} unmeasured ones; the
 * median of {@value #ROUNDS} rounds, each measuring every point, after one unmeasured round.
 */
public final class FeedBench {
    static final int ROOMS = 1_000;
    static final int ROOM_SUBSCRIBERS = 10;
    static final int COMMITS = 4_000;
    static final int WARMUP = 1_000;
    static final int ROUNDS = 3;
    static final int[] OTHERS = {0, 100, 1_000, 10_000};

    private FeedBench() {
    }

    /** One subscriber: where it is, and what it got. */
    private abstract static class Subscriber {
        final String room;
        long seen;
        long delivered;

        Subscriber(String room, long seen) {
            this.room = room;
            this.seen = seen;
        }

        abstract void arm();
    }

    /** Waits on its room's prefix feed. */
    private static final class ByPrefix extends Subscriber {
        final PrefixFeed<Tuple, String> feed;

        ByPrefix(PrefixFeed<Tuple, String> feed, String room) {
            super(room, feed.lastSeq());
            this.feed = feed;
        }

        @Override
        void arm() {
            feed.after(seen).thenRun(() -> {
                PrefixFeed.Changes<Tuple, String> c = feed.read(seen, 64);
                for (ChangeSet<Tuple, String> set : c.sets()) delivered += set.changes().size();
                seen = c.through();
                arm();
            });
        }
    }

    /** Waits on the whole table's feed and keeps its room's changes. */
    private static final class ByFilter extends Subscriber {
        final ChangeFeed<Tuple, String> feed;

        ByFilter(ChangeFeed<Tuple, String> feed, String room) {
            super(room, feed.lastSeq());
            this.feed = feed;
        }

        @Override
        void arm() {
            feed.after(seen).thenRun(() -> {
                for (ChangeSet<Tuple, String> set : feed.read(seen, 64)) {
                    for (ChangeSet.Change<Tuple, String> c : set.changes()) {
                        if (c.key().getString(0).equals(room)) delivered++;
                    }
                    seen = set.seq();
                }
                arm();
            });
        }
    }

    public static void main(String[] args) throws Exception {
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        System.out.println("kiln bench-feeds: CPU per durable commit to one room (" + ROOM_SUBSCRIBERS + " subscribers) while "
            + "0..10,000 subscribers wait on " + (ROOMS - 1) + " other rooms; " + COMMITS + " commits per point; "
            + Runtime.getRuntime().availableProcessors() + " CPUs");
        double[][][] cpu = new double[ROUNDS + 1][OTHERS.length][2];
        for (int round = 0; round <= ROUNDS; round++) {
            System.err.printf("bench-feeds: round %d/%d%s%n", round, ROUNDS, round == 0 ? " (warm-up, not counted)" : "");
            for (int i = 0; i < OTHERS.length; i++) {
                cpu[round][i][0] = run(os, OTHERS[i], true);
                cpu[round][i][1] = run(os, OTHERS[i], false);
            }
        }
        System.out.printf("  %-18s %24s %31s %8s%n", "other subscribers", "prefix feeds, us/commit", "table feed + filter, us/commit", "ratio");
        for (int i = 0; i < OTHERS.length; i++) {
            double prefix = median(cpu, i, 0);
            double filter = median(cpu, i, 1);
            System.out.printf("  %-18s %24.1f %31.1f %8.1f%n", String.format("%,d", OTHERS[i]), prefix, filter, filter / prefix);
        }
    }

    /** @return the median over the counted rounds (1..ROUNDS) of one point and way */
    private static double median(double[][][] cpu, int point, int way) {
        double[] v = new double[ROUNDS];
        for (int r = 1; r <= ROUNDS; r++) v[r - 1] = cpu[r][point][way];
        java.util.Arrays.sort(v);
        return v[ROUNDS / 2];
    }

    /** @return CPU microseconds per commit */
    private static double run(com.sun.management.OperatingSystemMXBean os, int others, boolean byPrefix) throws Exception {
        Path dir = BenchDirs.fresh("feeds");
        try (Db db = Db.open(dir)) {
            Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
            ChangeFeed<Tuple, String> feed = db.changeFeed(messages, 10_000);
            List<Subscriber> subscribers = new ArrayList<>();
            for (int i = 0; i < ROOM_SUBSCRIBERS + others; i++) {
                // the first ROOM_SUBSCRIBERS follow room0, the committed one; the others rooms 1..999
                String room = i < ROOM_SUBSCRIBERS ? "room0" : "room" + (1 + (i - ROOM_SUBSCRIBERS) % (ROOMS - 1));
                subscribers.add(byPrefix ? new ByPrefix(feed.prefix(Tuple.of(room)), room) : new ByFilter(feed, room));
            }
            for (Subscriber s : subscribers) s.arm();
            commit(db, messages, 0, WARMUP);
            long before = os.getProcessCpuTime();
            commit(db, messages, WARMUP, WARMUP + COMMITS);
            long cpu = os.getProcessCpuTime() - before;
            long delivered = 0;
            for (int i = 0; i < ROOM_SUBSCRIBERS; i++) delivered += subscribers.get(i).delivered;
            long expected = (long) ROOM_SUBSCRIBERS * (WARMUP + COMMITS);
            if (delivered != expected) throw new IllegalStateException("room0's subscribers got " + delivered + " changes, not " + expected);
            for (int i = ROOM_SUBSCRIBERS; i < subscribers.size(); i++) {
                if (subscribers.get(i).delivered != 0) throw new IllegalStateException("a subscriber of another room got room0's changes");
            }
            return cpu / 1_000.0 / COMMITS;
        } finally {
            BenchDirs.delete(dir);
        }
    }

    private static void commit(Db db, Table<Tuple, String> messages, long from, long to) {
        for (long id = from; id < to; id++) {
            long n = id;
            db.write(txn -> {
                messages.put(txn, Tuple.of("room0", n), "message " + n);
                return null;
            }).join();
        }
    }
}

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
 *
 * <p>A second table shows what the subscribers cost the writer thread: its CPU per commit
 * ({@code ThreadMXBean.getThreadCpuTime} of {@code kiln-db-writer}) and a write's latency (the
 * commits are sequential: elapsed time per commit), for the two ways above and a third, the table's
 * feed with each woken subscriber resumed on a carrier thread, as a Kilim fiber is (handed to the
 * carrier's queue, the carrier woken; the carrier reads and filters): what every commit of
 * {@code /updates} costs with {@code /updates/events} subscribers. Beside them, how long the room's
 * subscribers took to hear of a commit, from its durable time ({@link ChangeSet#committedAt}) to their step.
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

    /** The ways of following a room, in the order the tables print them. */
    private enum Way {
        PREFIX("prefix feeds"), FILTER("table feed + filter"), FIBERS("table feed, fibers on a carrier");

        final String label;

        Way(String label) {
            this.label = label;
        }
    }

    /**
     * What one run measured, per commit: the process's CPU, the writer thread's CPU, the elapsed time
     * (µs); and the delivery latency to the committed room's subscribers, median and 99th percentile (µs).
     */
    private record Figures(double cpu, double writerCpu, double elapsed, double deliveryP50, double deliveryP99) {
    }

    /** The committed room's deliveries while measured: from the commit's durable time to the subscriber's step, µs. */
    private static final class Latencies {
        private final long[] values = new long[ROOM_SUBSCRIBERS * COMMITS];
        private final java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();
        volatile boolean on;

        void add(ChangeSet<?, ?> set) {
            if (!on) return;
            int i = count.getAndIncrement();
            if (i < values.length) values[i] = micros() - set.committedAt();
        }

        double percentile(double p) {
            long[] v = java.util.Arrays.copyOf(values, Math.min(count.get(), values.length));
            if (v.length == 0) return Double.NaN;
            java.util.Arrays.sort(v);
            return v[(int) Math.min(v.length - 1, Math.round(p * (v.length - 1)))];
        }

        /** The database's clock (kiln.db.Clock): a set's committedAt is its durable time by it. */
        private static long micros() {
            java.time.Instant now = java.time.Instant.now();
            return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
        }
    }

    /** One subscriber: where it is, and what it got. */
    private abstract static class Subscriber {
        final String room;
        long seen;
        /** Counted by the one thread that runs its wake-ups; read by the main thread. */
        volatile long delivered;
        /** Where the committed room's subscribers note their deliveries; null for the other rooms'. */
        Latencies latencies;

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
                for (ChangeSet<Tuple, String> set : c.sets()) {
                    delivered += set.changes().size();
                    if (latencies != null) latencies.add(set);
                }
                seen = c.through();
                arm();
            });
        }
    }

    /** Waits on the whole table's feed and keeps its room's changes. */
    private static class ByFilter extends Subscriber {
        final ChangeFeed<Tuple, String> feed;

        ByFilter(ChangeFeed<Tuple, String> feed, String room) {
            super(room, feed.lastSeq());
            this.feed = feed;
        }

        @Override
        void arm() {
            feed.after(seen).thenRun(this::step);
        }

        void step() {
            long got = 0;
            for (ChangeSet<Tuple, String> set : feed.read(seen, 64)) {
                for (ChangeSet.Change<Tuple, String> c : set.changes()) {
                    if (c.key().getString(0).equals(room)) {
                        got++;
                        if (latencies != null) latencies.add(set);
                    }
                }
                seen = set.seq();
            }
            if (got > 0) delivered += got;
            arm();
        }
    }

    /** {@link ByFilter}, whose wake-up resumes it on a carrier thread, as a Kilim fiber's does. */
    private static final class OnCarrier extends ByFilter {
        final Carrier carrier;

        OnCarrier(ChangeFeed<Tuple, String> feed, String room, Carrier carrier) {
            super(feed, room);
            this.carrier = carrier;
        }

        @Override
        void arm() {
            feed.after(seen).thenRun(() -> carrier.resume(this::step));
        }
    }

    /**
     * One carrier thread: a queue of resumed fibers it runs, woken when it sleeps (Kilim's carrier
     * queues the fiber and wakes its selector once per select).
     */
    private static final class Carrier implements AutoCloseable {
        private final java.util.concurrent.ConcurrentLinkedQueue<Runnable> queue = new java.util.concurrent.ConcurrentLinkedQueue<>();
        private final java.util.concurrent.atomic.AtomicBoolean asleep = new java.util.concurrent.atomic.AtomicBoolean();
        private final Thread thread = new Thread(this::run, "bench-carrier");
        private volatile boolean stopped;

        Carrier() {
            thread.setDaemon(true);
            thread.start();
        }

        void resume(Runnable fiber) {
            queue.add(fiber);
            if (asleep.compareAndSet(true, false)) java.util.concurrent.locks.LockSupport.unpark(thread);
        }

        boolean idle() {
            return queue.isEmpty();
        }

        private void run() {
            while (!stopped) {
                for (Runnable r; (r = queue.poll()) != null; ) r.run();
                asleep.set(true);
                if (queue.isEmpty()) java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                asleep.set(false);
            }
        }

        @Override
        public void close() {
            stopped = true;
        }
    }

    public static void main(String[] args) throws Exception {
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        System.out.println("kiln bench-feeds: CPU per durable commit to one room (" + ROOM_SUBSCRIBERS + " subscribers) while "
            + "0..10,000 subscribers wait on " + (ROOMS - 1) + " other rooms; " + COMMITS + " commits per point; "
            + Runtime.getRuntime().availableProcessors() + " CPUs, load average at start " + BenchDb.loadAverage());
        Way[] ways = Way.values();
        Figures[][][] figures = new Figures[ROUNDS + 1][OTHERS.length][ways.length];
        for (int round = 0; round <= ROUNDS; round++) {
            System.err.printf("bench-feeds: round %d/%d%s%n", round, ROUNDS, round == 0 ? " (warm-up, not counted)" : "");
            for (int i = 0; i < OTHERS.length; i++) {
                for (Way way : ways) figures[round][i][way.ordinal()] = run(os, OTHERS[i], way);
            }
        }
        System.out.printf("  %-18s %24s %31s %8s%n", "other subscribers", "prefix feeds, us/commit", "table feed + filter, us/commit", "ratio");
        for (int i = 0; i < OTHERS.length; i++) {
            double prefix = median(figures, i, Way.PREFIX, Figures::cpu);
            double filter = median(figures, i, Way.FILTER, Figures::cpu);
            System.out.printf("  %-18s %24.1f %31.1f %8.1f%n", String.format("%,d", OTHERS[i]), prefix, filter, filter / prefix);
        }
        System.out.println();
        System.out.println("  per commit (us): the writer thread's CPU, a write's latency, the process's CPU; and the delivery"
            + " to the room's subscribers, from the commit's durable time, median and p99 (us)");
        System.out.printf("  %-18s %-32s %11s %11s %11s %11s %11s%n", "other subscribers", "way", "writer CPU", "write", "process CPU",
            "deliv. p50", "deliv. p99");
        for (int i = 0; i < OTHERS.length; i++) {
            for (Way way : ways) {
                System.out.printf("  %-18s %-32s %11.1f %11.1f %11.1f %11.0f %11.0f%n", String.format("%,d", OTHERS[i]), way.label,
                    median(figures, i, way, Figures::writerCpu), median(figures, i, way, Figures::elapsed), median(figures, i, way, Figures::cpu),
                    median(figures, i, way, Figures::deliveryP50), median(figures, i, way, Figures::deliveryP99));
            }
        }
        System.out.println("  load average at end " + BenchDb.loadAverage());
    }

    /** @return the median over the counted rounds (1..ROUNDS) of one figure of one point and way */
    private static double median(Figures[][][] figures, int point, Way way, java.util.function.ToDoubleFunction<Figures> figure) {
        double[] v = new double[ROUNDS];
        for (int r = 1; r <= ROUNDS; r++) v[r - 1] = figure.applyAsDouble(figures[r][point][way.ordinal()]);
        java.util.Arrays.sort(v);
        return v[ROUNDS / 2];
    }

    /** @return the figures per commit, µs */
    private static Figures run(com.sun.management.OperatingSystemMXBean os, int others, Way way) throws Exception {
        Path dir = BenchDirs.fresh("feeds");
        java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (Db db = Db.open(dir); Carrier carrier = new Carrier()) {
            long writer = writerThread();
            Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
            ChangeFeed<Tuple, String> feed = db.changeFeed(messages, 10_000);
            List<Subscriber> subscribers = new ArrayList<>();
            for (int i = 0; i < ROOM_SUBSCRIBERS + others; i++) {
                // the first ROOM_SUBSCRIBERS follow room0, the committed one; the others rooms 1..999
                String room = i < ROOM_SUBSCRIBERS ? "room0" : "room" + (1 + (i - ROOM_SUBSCRIBERS) % (ROOMS - 1));
                subscribers.add(switch (way) {
                    case PREFIX -> new ByPrefix(feed.prefix(Tuple.of(room)), room);
                    case FILTER -> new ByFilter(feed, room);
                    case FIBERS -> new OnCarrier(feed, room, carrier);
                });
            }
            Latencies latencies = new Latencies();
            for (int i = 0; i < ROOM_SUBSCRIBERS; i++) subscribers.get(i).latencies = latencies;
            for (Subscriber s : subscribers) s.arm();
            commit(db, messages, 0, WARMUP);
            settle(subscribers, WARMUP, carrier);
            long before = os.getProcessCpuTime();
            long writerBefore = threads.getThreadCpuTime(writer);
            latencies.on = true;
            long start = System.nanoTime();
            commit(db, messages, WARMUP, WARMUP + COMMITS);
            long elapsed = System.nanoTime() - start;
            long writerCpu = threads.getThreadCpuTime(writer) - writerBefore;
            settle(subscribers, WARMUP + COMMITS, carrier);
            long cpu = os.getProcessCpuTime() - before;
            for (int i = ROOM_SUBSCRIBERS; i < subscribers.size(); i++) {
                if (subscribers.get(i).delivered != 0) throw new IllegalStateException("a subscriber of another room got room0's changes");
            }
            return new Figures(cpu / 1_000.0 / COMMITS, writerCpu / 1_000.0 / COMMITS, elapsed / 1_000.0 / COMMITS,
                latencies.percentile(0.5), latencies.percentile(0.99));
        } finally {
            BenchDirs.delete(dir);
        }
    }

    /** @return the id of the database's writer thread */
    private static long writerThread() {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("kiln-db-writer") && t.isAlive()) return t.getId();
        }
        throw new IllegalStateException("no kiln-db-writer thread");
    }

    /** Waits until room0's subscribers got the changes of {@code commits} commits and the carrier is idle. */
    private static void settle(List<Subscriber> subscribers, long commits, Carrier carrier) throws InterruptedException {
        long expected = ROOM_SUBSCRIBERS * commits;
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            long delivered = 0;
            for (int i = 0; i < ROOM_SUBSCRIBERS; i++) delivered += subscribers.get(i).delivered;
            if (delivered == expected && carrier.idle()) return;
            if (delivered > expected || System.nanoTime() > deadline) {
                throw new IllegalStateException("room0's subscribers got " + delivered + " changes, not " + expected);
            }
            Thread.sleep(1);
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

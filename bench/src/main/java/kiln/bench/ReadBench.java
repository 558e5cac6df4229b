package kiln.bench;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.Txn;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;

/**
 * Single-key point reads on one thread, the shape of TechEmpower's /db: a 10,000-row table of int
 * to int, a random existing key per operation (the same key sequence in every benchmark).
 *
 * <ul>
 *   <li>{@link #dbRead}: {@code db.read(txn -> table.get(txn, k)).join()}, what a front end calls;</li>
 *   <li>{@link #rawRenewGetReset}: lmdbjava directly, the usual way to serve point reads from a
 *       thread: one read transaction per thread, {@code renew()} before and {@code reset()} after
 *       each get (no reader-slot allocation per read);</li>
 *   <li>{@link #rawGetInOneTxn}: lmdbjava gets inside one long-lived read transaction; an upper bound
 *       no server can use (it would pin one snapshot forever).</li>
 * </ul>
 * Both raw environments use the same flags as {@link Db} (MDB_NOTLS), so the gap is kiln's own cost:
 * the query lambda, the transaction pool, the map lock and the future.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Threads(1)
@Warmup(iterations = 1, time = 1)
@Measurement(iterations = 2, time = 1)
public class ReadBench {
    static final int ROWS = 10_000;
    private static final int KEY_MASK = 4095;
    private static final int[] KEYS = new int[KEY_MASK + 1];

    static {
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < KEYS.length; i++) KEYS[i] = 1 + random.nextInt(ROWS);
    }

    /** Value stored under key {@code k} in both environments. */
    static int valueOf(int k) {
        return k * 31 + 7;
    }

    /** The next key of the shared sequence, per benchmark thread. */
    @State(Scope.Thread)
    public static class Keys {
        private int i;

        int next() {
            return KEYS[i++ & KEY_MASK];
        }
    }

    /** A kiln database holding the table. */
    @State(Scope.Benchmark)
    public static class KilnDb {
        Path dir;
        Db db;
        Table<Integer, Integer> worlds;

        @Setup(Level.Trial)
        public void open() {
            dir = BenchDirs.fresh("read-kiln");
            db = Db.open(dir);
            worlds = db.table("world", Codec.INT, Codec.INT);
            db.write(txn -> {
                for (int k = 1; k <= ROWS; k++) worlds.put(txn, k, valueOf(k));
                return null;
            }).join();
        }

        @TearDown(Level.Trial)
        public void close() {
            db.close();
            BenchDirs.delete(dir);
        }
    }

    /**
     * A raw lmdbjava environment holding the same bytes (kiln's INT codec: big-endian, sign bit
     * flipped), and this thread's read transaction, kept reset between gets. Thread-scoped (the
     * benchmarks run one thread) so that the transaction is closed before the environment.
     */
    @State(Scope.Thread)
    public static class RawLmdb {
        Path dir;
        Env<ByteBuffer> env;
        Dbi<ByteBuffer> dbi;
        Txn<ByteBuffer> resetTxn;
        final ByteBuffer key = ByteBuffer.allocateDirect(4);

        @Setup(Level.Trial)
        public void open() {
            dir = BenchDirs.fresh("read-raw");
            env = Env.create().setMapSize(64L << 20).setMaxDbs(1).open(dir.toFile(), EnvFlags.MDB_NOTLS);
            dbi = env.openDbi("world", DbiFlags.MDB_CREATE);
            ByteBuffer key = ByteBuffer.allocateDirect(4);
            ByteBuffer val = ByteBuffer.allocateDirect(4);
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                for (int k = 1; k <= ROWS; k++) {
                    dbi.put(txn, encode(key, k), encode(val, valueOf(k)));
                }
                txn.commit();
            }
            resetTxn = env.txnRead();
            resetTxn.reset();
        }

        @TearDown(Level.Trial)
        public void close() {
            resetTxn.close();
            env.close();
            BenchDirs.delete(dir);
        }
    }

    /** One read transaction per thread, open for a whole measurement iteration. */
    @State(Scope.Thread)
    public static class OpenTxn {
        Txn<ByteBuffer> txn;
        final ByteBuffer key = ByteBuffer.allocateDirect(4);

        @Setup(Level.Iteration)
        public void open(RawLmdb raw) {
            txn = raw.env.txnRead();
        }

        @TearDown(Level.Iteration)
        public void close() {
            txn.close();
        }
    }

    static ByteBuffer encode(ByteBuffer buf, int v) {
        buf.clear();
        buf.putInt(v ^ Integer.MIN_VALUE);
        buf.flip();
        return buf;
    }

    /** @return the int of kiln's INT encoding at {@code found}'s position (which moves) */
    static int decode(ByteBuffer found) {
        return found.order(ByteOrder.BIG_ENDIAN).getInt() ^ Integer.MIN_VALUE;
    }

    @Benchmark
    public Integer dbRead(KilnDb s, Keys keys) {
        int k = keys.next();
        return s.db.read(txn -> s.worlds.get(txn, k)).join();
    }

    @Benchmark
    public int rawRenewGetReset(RawLmdb s, Keys keys) {
        s.resetTxn.renew();
        try {
            return decode(s.dbi.get(s.resetTxn, encode(s.key, keys.next())));
        } finally {
            s.resetTxn.reset();
        }
    }

    @Benchmark
    public int rawGetInOneTxn(RawLmdb s, OpenTxn t, Keys keys) {
        return decode(s.dbi.get(t.txn, encode(t.key, keys.next())));
    }
}

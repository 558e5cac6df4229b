package kiln.bench;

import static kiln.bench.ReadBench.decode;
import static kiln.bench.ReadBench.encode;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.lmdbjava.Cursor;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.GetOp;
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
import kiln.db.Index;
import kiln.db.Page;
import kiln.db.Range;
import kiln.db.Table;

/**
 * The data model's operations beside raw lmdbjava doing the same work, on one thread, in one JMH
 * run: a point read, a 20-row page forward and reversed, a lookup by a secondary index, and a durable
 * write without and with one index. A 10,000-row table of int to int (the value {@code k * 31 + 7},
 * unique) with an index by value; random existing keys, the same sequence in every benchmark.
 *
 * <p>The raw side: a read transaction per thread renewed before and reset after each read; a page
 * is a cursor positioned with {@code MDB_SET_RANGE} and moved 20 times, each row decoded; the index is
 * an LMDB database of {@code value ++ key} keys, read with one cursor seek and one get; a write is
 * {@code txnWrite, put, commit} (fsync), the indexed one deleting the old entry and putting the new.
 * The kiln side is what a handler calls, {@code db.read(...).join()} and {@code db.write(...).join()}
 * (a page includes its signed continuation).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Threads(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class ModelBench {
    static final int ROWS = 10_000;
    static final int PAGE = 20;
    private static final int KEY_MASK = 4095;
    private static final int[] KEYS = new int[KEY_MASK + 1];

    static {
        SplittableRandom random = new SplittableRandom(2);
        for (int i = 0; i < KEYS.length; i++) KEYS[i] = 1 + random.nextInt(ROWS);
    }

    static int valueOf(int k) {
        return k * 31 + 7;
    }

    /** The next key of the shared sequence, and a changing value for writes, per benchmark thread. */
    @State(Scope.Thread)
    public static class Keys {
        private int i;
        private int round;

        int next() {
            return KEYS[i++ & KEY_MASK];
        }

        /** @return a value no row has: a write changes its row's index entry */
        int freshValue() {
            return -(++round);
        }
    }

    /** A kiln database with the table and its index. */
    @State(Scope.Benchmark)
    public static class Kiln {
        Path dir;
        Db db;
        Table<Integer, Integer> plain;
        Table<Integer, Integer> indexed;
        Index<Integer, Integer, Integer> byValue;

        @Setup(Level.Trial)
        public void open() {
            dir = BenchDirs.fresh("model-kiln");
            db = Db.open(dir);
            plain = db.table("plain", Codec.INT, Codec.INT);
            indexed = db.table("indexed", Codec.INT, Codec.INT);
            byValue = db.index(indexed, "indexed.by-value", Codec.INT, (k, v) -> v);
            db.write(txn -> {
                for (int k = 1; k <= ROWS; k++) {
                    plain.put(txn, k, valueOf(k));
                    indexed.put(txn, k, valueOf(k));
                }
                return null;
            }).join();
        }

        @TearDown(Level.Trial)
        public void close() {
            db.close();
            BenchDirs.delete(dir);
        }
    }

    /** Raw lmdbjava holding the same bytes, and this thread's read transaction, reset between reads. */
    @State(Scope.Thread)
    public static class Raw {
        Path dir;
        Env<ByteBuffer> env;
        Dbi<ByteBuffer> plain;
        Dbi<ByteBuffer> indexed;
        Dbi<ByteBuffer> byValue;
        Txn<ByteBuffer> read;
        final ByteBuffer key = ByteBuffer.allocateDirect(4);
        final ByteBuffer value = ByteBuffer.allocateDirect(4);
        final ByteBuffer entry = ByteBuffer.allocateDirect(8);
        final ByteBuffer empty = ByteBuffer.allocateDirect(0);

        @Setup(Level.Trial)
        public void open() {
            dir = BenchDirs.fresh("model-raw");
            env = Env.create().setMapSize(256L << 20).setMaxDbs(4).open(dir.toFile(), EnvFlags.MDB_NOTLS);
            plain = env.openDbi("plain", DbiFlags.MDB_CREATE);
            indexed = env.openDbi("indexed", DbiFlags.MDB_CREATE);
            byValue = env.openDbi("indexed.by-value", DbiFlags.MDB_CREATE);
            try (Txn<ByteBuffer> txn = env.txnWrite()) {
                for (int k = 1; k <= ROWS; k++) {
                    plain.put(txn, encode(key, k), encode(value, valueOf(k)));
                    indexed.put(txn, encode(key, k), encode(value, valueOf(k)));
                    byValue.put(txn, entry(entry, valueOf(k), k), empty);
                }
                txn.commit();
            }
            read = env.txnRead();
            read.reset();
        }

        @TearDown(Level.Trial)
        public void close() {
            read.close();
            env.close();
            BenchDirs.delete(dir);
        }
    }

    static ByteBuffer entry(ByteBuffer buf, int value, int key) {
        buf.clear();
        buf.putInt(value ^ Integer.MIN_VALUE).putInt(key ^ Integer.MIN_VALUE);
        return buf.flip();
    }

    // point read

    @Benchmark
    public Integer kilnPointRead(Kiln s, Keys keys) {
        int k = keys.next();
        return s.db.read(txn -> s.plain.get(txn, k)).join();
    }

    @Benchmark
    public int rawPointRead(Raw s, Keys keys) {
        s.read.renew();
        try {
            return decode(s.plain.get(s.read, encode(s.key, keys.next())));
        } finally {
            s.read.reset();
        }
    }

    // a page of 20 rows

    @Benchmark
    public Page<Integer, Integer> kilnPage(Kiln s, Keys keys) {
        Range<Integer> r = Range.atLeast(keys.next()).limit(PAGE);
        return s.db.read(txn -> s.plain.range(txn, r)).join();
    }

    @Benchmark
    public Page<Integer, Integer> kilnPageReverse(Kiln s, Keys keys) {
        Range<Integer> r = Range.atMost(keys.next()).reverse().limit(PAGE);
        return s.db.read(txn -> s.plain.range(txn, r)).join();
    }

    /** A page that ends its range (its last), so it makes no continuation: what the token costs is the difference. */
    @Benchmark
    public Page<Integer, Integer> kilnPageLast(Kiln s, Keys keys) {
        int k = Math.min(keys.next(), ROWS - PAGE + 1);
        Range<Integer> r = Range.closed(k, k + PAGE - 1).limit(PAGE);
        return s.db.read(txn -> s.plain.range(txn, r)).join();
    }

    @Benchmark
    public List<int[]> rawPage(Raw s, Keys keys) {
        return rawPage(s, keys.next(), false);
    }

    @Benchmark
    public List<int[]> rawPageReverse(Raw s, Keys keys) {
        return rawPage(s, keys.next(), true);
    }

    private static List<int[]> rawPage(Raw s, int from, boolean reverse) {
        List<int[]> rows = new ArrayList<>(PAGE);
        s.read.renew();
        try (Cursor<ByteBuffer> c = s.plain.openCursor(s.read)) {
            ByteBuffer k = encode(s.key, from);
            boolean at = c.get(k, GetOp.MDB_SET_RANGE);
            if (reverse) at = at ? (c.key().equals(k) || c.prev()) : c.last();
            while (at && rows.size() < PAGE) {
                rows.add(new int[] {decode(c.key()), decode(c.val())});
                at = reverse ? c.prev() : c.next();
            }
        } finally {
            s.read.reset();
        }
        return rows;
    }

    // a lookup by the index

    @Benchmark
    public Integer kilnIndexGet(Kiln s, Keys keys) {
        int v = valueOf(keys.next());
        return s.db.read(txn -> s.byValue.get(txn, v)).join();
    }

    @Benchmark
    public int rawIndexGet(Raw s, Keys keys) {
        s.read.renew();
        try (Cursor<ByteBuffer> c = s.byValue.openCursor(s.read)) {
            ByteBuffer v = encode(s.value, valueOf(keys.next()));
            if (!c.get(v, GetOp.MDB_SET_RANGE)) return 0;
            ByteBuffer e = c.key();
            if (e.getInt(e.position()) != v.getInt(0)) return 0;
            ByteBuffer k = s.key.clear().putInt(e.getInt(e.position() + 4)).flip();
            return decode(s.indexed.get(s.read, k));
        } finally {
            s.read.reset();
        }
    }

    // a durable write

    @Benchmark
    public Object kilnWrite(Kiln s, Keys keys) {
        int k = keys.next();
        int v = keys.freshValue();
        return s.db.write(txn -> {
            s.plain.put(txn, k, v);
            return null;
        }).join();
    }

    @Benchmark
    public Object kilnWriteIndexed(Kiln s, Keys keys) {
        int k = keys.next();
        int v = keys.freshValue();
        return s.db.write(txn -> {
            s.indexed.put(txn, k, v);
            return null;
        }).join();
    }

    @Benchmark
    public void rawWrite(Raw s, Keys keys) {
        try (Txn<ByteBuffer> txn = s.env.txnWrite()) {
            s.plain.put(txn, encode(s.key, keys.next()), encode(s.value, keys.freshValue()));
            txn.commit();
        }
    }

    @Benchmark
    public void rawWriteIndexed(Raw s, Keys keys) {
        int k = keys.next();
        int v = keys.freshValue();
        try (Txn<ByteBuffer> txn = s.env.txnWrite()) {
            ByteBuffer old = s.indexed.get(txn, encode(s.key, k));
            if (old != null) s.byValue.delete(txn, entry(s.entry, decode(old), k));
            s.indexed.put(txn, encode(s.key, k), encode(s.value, v));
            s.byValue.put(txn, entry(s.entry, v, k), s.empty);
            txn.commit();
        }
    }
}

package kiln.powercut;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import org.lmdbjava.EnvFlags;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import kiln.db.lmdb.LmdbEngine;

/**
 * The process the power-cut test kills: durable writes from several threads and change-feed readers
 * against one database, each acknowledged on standard output only after its future completed.
 *
 * <p>Writer {@code w}'s operation {@code n} is one write query: it puts row {@code (w, n)}, deletes
 * row {@code (w, n - 3)} when {@code n} is a multiple of 5, and sets {@code counters[w] = n}; the
 * rows table has a change feed whose window keeps every set. So the state after a cut says exactly
 * which operations committed, and {@code kiln.powercut.Check} can tell a lost acknowledged write from
 * a half-applied one. Output lines: {@code READY}, {@code A w n} (operation n of writer w is
 * durable), {@code S seq} (a feed reader was handed change set seq).
 *
 * <p>{@code --no-sync} opens LMDB with {@code MDB_NOSYNC} ({@link LmdbEngine.Builder#flags}), so
 * that the test can show it would catch a database that acknowledges before its writes are durable.
 *
 * <p>Usage: {@code PowerCutLoad DATA_DIR WRITERS [--no-sync]}
 */
public final class PowerCutLoad {
    /**
     * Change sets the rows table's feed keeps: many cuts' worth, so that the log's checks span cuts,
     * and bounded, so that a check reads a bounded log however long the run.
     */
    public static final int FEED_WINDOW = 50_000;
    public static final String ROWS = "rows";
    public static final String COUNTERS = "counters";

    private PowerCutLoad() {
    }

    /** @return the key of writer {@code w}'s row {@code n} */
    public static long key(int w, long n) {
        return ((long) w << 40) | n;
    }

    /** @return the value operation {@code n} of writer {@code w} puts: 64 bytes, different per row */
    public static String value(int w, long n) {
        String head = "w" + w + "-n" + n + "-";
        return head + "x".repeat(64 - head.length());
    }

    /** @return whether operation {@code n} also deletes row {@code n - 3} */
    public static boolean deletes(long n) {
        return n % 5 == 0 && n > 3;
    }

    public static void main(String[] args) throws Exception {
        Path data = Path.of(args[0]);
        int writers = Integer.parseInt(args[1]);
        boolean noSync = args.length > 2 && args[2].equals("--no-sync");
        LmdbEngine.Builder engine = LmdbEngine.builder(data).maxMapSize(1L << 30);
        if (noSync) engine.flags(EnvFlags.MDB_NOSYNC);
        Db db = Db.builder(engine.open()).open();
        Table<Long, String> rows = db.table(ROWS, Codec.LONG, Codec.STRING);
        Table<Integer, Long> counters = db.table(COUNTERS, Codec.INT, Codec.LONG);
        ChangeFeed<Long, String> feed = db.changeFeed(rows, FEED_WINDOW);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        out.println("READY");
        out.flush();
        for (int r = 0; r < 2; r++) {
            Thread reader = new Thread(() -> {
                long seen = feed.lastSeq();
                while (true) {
                    feed.after(seen).join();
                    for (ChangeSet<Long, String> set : feed.read(seen, 100)) seen = set.seq();
                    synchronized (out) {
                        out.println("S " + seen);
                        out.flush();
                    }
                }
            }, "feed-reader-" + r);
            reader.setDaemon(true);
            reader.start();
        }
        for (int w = 0; w < writers; w++) {
            int me = w;
            Thread writer = new Thread(() -> {
                long n = db.read(txn -> counters.get(txn, me, 0L)).join();
                while (true) {
                    long op = ++n;
                    String v = value(me, op);
                    db.write(txn -> {
                        rows.put(txn, key(me, op), v);
                        if (deletes(op)) rows.delete(txn, key(me, op - 3));
                        counters.put(txn, me, op);
                        return null;
                    }).join();
                    synchronized (out) {
                        out.println("A " + me + " " + op);
                        out.flush();
                    }
                }
            }, "writer-" + w);
            writer.start();
        }
    }
}

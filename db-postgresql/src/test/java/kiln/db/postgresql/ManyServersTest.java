package kiln.db.postgresql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.QueryFuture;
import kiln.db.Sequence;
import kiln.db.Table;

/**
 * Two databases over one PostgreSQL schema, as two kiln servers behind nginx: their writers take
 * turns (no increment lost), a change feed numbers every commit once, in commit order, whichever
 * server made it, and delivers it to readers on both; and a write that meets another client's
 * concurrent write is run again on a fresh snapshot.
 */
class ManyServersTest {
    @TempDir
    Path dir;
    private Db a;
    private Db b;

    @BeforeEach
    void open() {
        a = Db.builder(TestPostgres.engine(dir)).open();
        b = Db.builder(TestPostgres.engine(dir)).open();
    }

    @AfterEach
    void close() {
        if (a != null) a.close();
        if (b != null) b.close();
    }

    @Test
    void aCommitThroughOneServerReachesAReaderOnTheOther() throws Exception {
        Table<Integer, String> ta = a.table("notes", Codec.INT, Codec.STRING);
        Table<Integer, String> tb = b.table("notes", Codec.INT, Codec.STRING);
        ChangeFeed<Integer, String> fa = a.changeFeed(ta, 1000);
        ChangeFeed<Integer, String> fb = b.changeFeed(tb, 1000);
        long seen = fb.lastSeq();
        QueryFuture<Void> next = fb.after(seen);
        a.write(txn -> {
            ta.put(txn, 1, "written through a");
            return null;
        }).join();
        next.get(10, TimeUnit.SECONDS);
        List<ChangeSet<Integer, String>> sets = fb.read(seen, 10);
        assertEquals(1, sets.size(), sets.toString());
        assertEquals(fa.lastSeq(), sets.get(0).seq(), "the same number on both servers");
        assertEquals("written through a", sets.get(0).changes().get(0).value());
        assertEquals("written through a", b.read(txn -> tb.get(txn, 1)).join(), "and the row itself");
    }

    @Test
    void writesFromBothServersAtOnceAreNumberedOnceEachInCommitOrder() throws Exception {
        Table<String, Integer> ta = a.table("hits", Codec.STRING, Codec.INT);
        Table<String, Integer> tb = b.table("hits", Codec.STRING, Codec.INT);
        ChangeFeed<String, Integer> fa = a.changeFeed(ta, 10_000);
        ChangeFeed<String, Integer> fb = b.changeFeed(tb, 10_000);
        long from = fa.lastSeq();
        int each = 40;  // writes per writer thread, four threads per server
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<?>> done = new ArrayList<>();
        try {
            for (int w = 0; w < 8; w++) {
                Db db = w % 2 == 0 ? a : b;
                Table<String, Integer> t = w % 2 == 0 ? ta : tb;
                String server = w % 2 == 0 ? "a" : "b";
                int writer = w;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < each; i++) {
                        String key = server + "-" + writer + "-" + i;
                        db.write(txn -> {
                            t.put(txn, key, 1);
                            // every write also bumps a row both servers write: they conflict
                            t.put(txn, "total", t.get(txn, "total", 0) + 1);
                            return null;
                        }).join();
                    }
                }));
            }
            for (Future<?> f : done) f.get(120, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        int writes = 8 * each;
        assertEquals(writes, a.read(txn -> ta.get(txn, "total")).join(), "no increment lost to a concurrent write");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((fa.lastSeq() < from + writes || fb.lastSeq() < from + writes) && System.nanoTime() < deadline) Thread.sleep(20);
        assertEquals(from + writes, fa.lastSeq(), "every commit numbered once, none skipped");
        assertEquals(from + writes, fb.lastSeq());
        List<ChangeSet<String, Integer>> onA = fa.read(from, writes);
        List<ChangeSet<String, Integer>> onB = fb.read(from, writes);
        assertEquals(writes, onA.size());
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < writes; i++) {
            assertEquals(from + i + 1, onA.get(i).seq(), "gap-free");
            assertEquals(onA.get(i).changes(), onB.get(i).changes(), "the same set under the same number on both servers");
            ChangeSet.Change<String, Integer> total = onA.get(i).changes().stream().filter(c -> c.key().equals("total")).findFirst().orElseThrow();
            assertEquals(i + 1, total.value(), "in commit order: set n holds the n-th increment");
            onA.get(i).changes().forEach(c -> keys.add(c.key()));
        }
        assertEquals(writes + 1, keys.size(), "every write's own key, and the total");
        assertEquals(0, a.stats().conflicts + b.stats().conflicts, "the writers took turns: no batch ran twice");
    }

    /**
     * Another client (plain JDBC) updates the row a write query has read, between its read and its
     * write: PostgreSQL's serializable commit refuses the query's transaction (40001), and the writer
     * runs the query again, which then reads the other client's value.
     */
    @Test
    void aWriteThatMeetsAnotherClientsWriteIsRunAgainOnAFreshSnapshot() throws Exception {
        Table<Integer, Integer> t = a.table("counters", Codec.INT, Codec.INT);
        a.write(txn -> {
            t.put(txn, 1, 0);
            return null;
        }).join();
        int[] runs = {0};
        int result = a.write(txn -> {
            int seen = t.get(txn, 1);
            if (runs[0]++ == 0) otherClientSets(1, 100);  // commits after this query's snapshot
            t.put(txn, 1, seen + 1);
            return seen + 1;
        }).get(30, TimeUnit.SECONDS);
        assertEquals(2, runs[0], "run twice");
        assertEquals(101, result, "the second run read the other client's 100");
        assertEquals(101, a.read(txn -> t.get(txn, 1)).join());
        assertEquals(1, a.stats().conflicts, a.stats().toString());
    }

    /** UPDATE counters SET v = value WHERE k = key, in kiln's encoding of Codec.INT, from a connection of its own. */
    private void otherClientSets(int key, int value) throws Exception {
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(TestPostgres.url() + "&currentSchema=" + TestPostgres.schema(dir));
             java.sql.PreparedStatement s = c.prepareStatement("UPDATE counters SET v = ? WHERE k = ?")) {
            s.setBytes(1, java.nio.ByteBuffer.allocate(4).putInt(value ^ Integer.MIN_VALUE).array());
            s.setBytes(2, java.nio.ByteBuffer.allocate(4).putInt(key ^ Integer.MIN_VALUE).array());
            assertEquals(1, s.executeUpdate());
        }
    }

    @Test
    void aSequenceSharedByTwoServersNeverGivesAValueTwice() throws Exception {
        Sequence sa = a.sequence("ids");
        Sequence sb = b.sequence("ids");
        List<QueryFuture<Long>> ids = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            ids.add(a.write(sa::next));
            ids.add(b.write(sb::next));
        }
        Set<Long> seen = new HashSet<>();
        for (QueryFuture<Long> id : ids) assertTrue(seen.add(id.get(60, TimeUnit.SECONDS)), "given twice: " + id.join());
        assertEquals(400, seen.size());
        assertEquals(400L, a.read(sa::current).join());
        assertEquals(0, a.stats().conflicts + b.stats().conflicts, "the writers took turns: no batch ran twice");
    }
}

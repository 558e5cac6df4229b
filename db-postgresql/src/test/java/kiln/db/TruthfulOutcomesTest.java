package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.postgresql.TestPostgres;

/**
 * What a write's future says over PostgreSQL is what happened to it: a committed write is never
 * answered as failed (a client would retry it and apply it twice), and a write that fails takes
 * none of the writes batched with it down.
 */
class TruthfulOutcomesTest {
    @TempDir
    Path dir;

    /**
     * Two servers over one schema. After a commit, a server publishes its change sets, and first
     * reads from the log the sets the other committed before them; when that read fails (its read
     * connections are cut), the commit has happened all the same: the write is answered as
     * committed, and the feed catches up from its log once the log can be read.
     */
    @Test
    void aCommittedWriteWhosePublishCannotReadTheLogIsAnsweredCommittedAndTheFeedCatchesUp() throws Exception {
        AtomicBoolean readsFail = new AtomicBoolean();
        KvEngine cut = new ForwardingEngine(TestPostgres.engine(dir)) {
            @Override
            public KvTxn beginRead() {
                if (readsFail.get()) throw new DbException.Unavailable("test: server a's read connections are cut", null);
                return super.beginRead();
            }

            @Override
            public void onCommits(Consumer<String> changed) {
                // deaf to the other server's notifications: a learns of b's commit only in its own publish
            }
        };
        try (Db a = Db.builder(cut).open(); Db b = Db.builder(TestPostgres.engine(dir)).open()) {
            Table<Integer, String> ta = a.table("notes", Codec.INT, Codec.STRING);
            Table<Integer, String> tb = b.table("notes", Codec.INT, Codec.STRING);
            ChangeFeed<Integer, String> fa = a.changeFeed(ta, 1000);
            b.changeFeed(tb, 1000);
            a.write(txn -> { ta.put(txn, 1, "a's first"); return null; }).join();
            b.write(txn -> { tb.put(txn, 2, "b's"); return null; }).join();
            long before = fa.lastSeq();

            readsFail.set(true);
            QueryFuture<Object> third = a.write(txn -> { ta.put(txn, 3, "a's second"); return null; });
            assertNull(third.get(30, TimeUnit.SECONDS), "committed, and answered so");
            assertEquals("a's second", b.read(txn -> tb.get(txn, 3)).join(), "the row is there");
            assertEquals(before, fa.lastSeq(), "not published yet: the log could not be read");

            readsFail.set(false);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (fa.lastSeq() < before + 2 && System.nanoTime() < deadline) Thread.sleep(20);
            List<ChangeSet<Integer, String>> sets = fa.read(before, 10);
            assertEquals(List.of(before + 1, before + 2), sets.stream().map(ChangeSet::seq).toList(), "b's set, then a's, from the log");
            assertEquals("a's second", sets.get(1).changes().get(0).value());
        }
    }

    /**
     * A statement that PostgreSQL refuses in one write query (here: its table's column renamed behind
     * kiln's back) aborts the whole transaction, and PostgreSQL refuses every later statement in it:
     * that write fails with PostgreSQL's error, and the 39 batched with it are committed without it.
     */
    @Test
    void aWriteWhoseStatementPostgresqlRefusesFailsAloneAndItsBatchMatesCommit() throws Exception {
        try (Db db = Db.builder(TestPostgres.engine(dir)).open()) {
            Table<Integer, Integer> ok = db.table("ok", Codec.INT, Codec.INT);
            Table<Integer, Integer> broken = db.table("broken", Codec.INT, Codec.INT);
            db.write(txn -> { broken.put(txn, 1, 1); return null; }).join();
            try (Connection c = DriverManager.getConnection(TestPostgres.url()); Statement s = c.createStatement()) {
                String schema = TestPostgres.schema(dir);
                String relname;
                try (ResultSet r = s.executeQuery("SELECT relname FROM " + schema + ".kiln_spaces WHERE name = 'broken'")) {
                    r.next();
                    relname = r.getString(1);
                }
                s.execute("ALTER TABLE " + schema + ".\"" + relname + "\" RENAME COLUMN v TO w");
            }
            List<QueryFuture<Object>> mates = new ArrayList<>();
            QueryFuture<Integer> refused;
            WriterGate gate = new WriterGate(db);
            try {
                for (int i = 0; i < 20; i++) mates.add(put(db, ok, i));
                refused = db.write(txn -> broken.get(txn, 1));
                for (int i = 20; i < 39; i++) mates.add(put(db, ok, i));
            } finally {
                gate.open();
            }
            for (QueryFuture<Object> m : mates) assertNull(m.get(30, TimeUnit.SECONDS));
            Throwable why = assertThrows(ExecutionException.class, () -> refused.get(30, TimeUnit.SECONDS)).getCause();
            assertTrue(why.getMessage().contains("42703"), "PostgreSQL's own error, undefined column: " + why);
            for (int i = 0; i < 39; i++) {
                int k = i;
                assertEquals(k, db.read(txn -> ok.get(txn, k)).join(), "batch-mate " + k + " committed");
            }
        }
    }

    private static QueryFuture<Object> put(Db db, Table<Integer, Integer> t, int key) {
        return db.write(txn -> { t.put(txn, key, key); return null; });
    }
}

package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Db#health}: ok while open and the writer moves; a problem when closed or when the writer is stuck. */
class HealthTest {
    @TempDir Path dir;

    @Test
    void anOpenDatabaseIsHealthyAndAClosedOneIsNot() {
        Db db = Engines.open(dir);
        DbHealth h = db.health();
        assertTrue(h.isOk(), h::toString);
        assertNull(h.problem());
        db.close();
        DbHealth closed = db.health();
        assertFalse(closed.isOk());
        assertEquals("the database is closed", closed.problem());
    }

    @Test
    void aWriterStuckInOneBatchLongerThanTheLimitIsReportedAndRecovers() throws Exception {
        try (Db db = Engines.builder(dir).writerStallLimit(Duration.ofMillis(200)).open()) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            WriterGate gate = new WriterGate(db);  // the writer is now inside one write query
            try {
                db.write(txn -> { t.put(txn, 1, 1); return null; });
                assertTrue(db.health().isOk(), "a batch younger than the limit is not a stall");
                Thread.sleep(400);
                DbHealth stuck = db.health();
                assertFalse(stuck.isOk());
                assertTrue(stuck.problem().startsWith("the database's writer has been in one batch for "), stuck.problem());
                assertTrue(stuck.problem().endsWith("1 writes waiting"), stuck.problem());
            } finally {
                gate.open();
            }
            db.write(txn -> null).join();
            assertTrue(db.health().isOk(), () -> "after the batch ends: " + db.health());
        }
    }

    /**
     * {@link Db#health(Duration)}: the same answers as a future, and a read that takes longer than
     * the deadline is the problem (a reader held here stands for a database server that answers
     * nothing; over PostgreSQL, FrozenServerTest pauses a real one).
     */
    @Test
    void theHealthFutureAnswersWithinItsDeadline() throws Exception {
        AtomicReference<CountDownLatch> hold = new AtomicReference<>();
        KvEngine held = new ForwardingEngine(MemoryEngine.at(dir)) {
            @Override
            public int readThreads() {
                return 1;  // reads go to a read thread, as over a network
            }

            @Override
            public KvTxn beginRead() {
                CountDownLatch latch = hold.get();
                try {
                    if (latch != null) latch.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return super.beginRead();
            }
        };
        Db db = Db.builder(held).open();
        try {
            assertTrue(db.health(Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS).isOk());
            CountDownLatch latch = new CountDownLatch(1);
            hold.set(latch);
            try {
                DbHealth late = db.health(Duration.ofMillis(300)).get(10, TimeUnit.SECONDS);
                assertFalse(late.isOk());
                assertTrue(late.problem().startsWith("the database did not answer a read within 300 ms ("), late.problem());
            } finally {
                hold.set(null);
                latch.countDown();
            }
            assertTrue(db.health(Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS).isOk(), "healthy again");
        } finally {
            db.close();
        }
        assertEquals("the database is closed", db.health(Duration.ofSeconds(1)).getNow(null).problem(), "answered at once");
    }
}

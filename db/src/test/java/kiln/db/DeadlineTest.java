package kiln.db;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Db.Builder#deadline}: a query the database does not answer in time fails with
 * {@link DbException.DeadlineExceeded}, which tells the truth about it: a write the writer had begun
 * may still commit (outcome unknown), and does; a write still queued is withdrawn and never runs (not
 * applied); a read that waits for a read thread is abandoned. The writer (and a reader) held inside
 * a query stands for a database server that answers nothing; over PostgreSQL FrozenServerTest pauses
 * a real one.
 */
class DeadlineTest {
    private static final Duration DEADLINE = Duration.ofMillis(500);
    /** How late past the deadline an answer may come on a busy 2-core machine, ms: generous; the design says one tick (100 ms). */
    private static final long LATE_MS = 3_000;

    @TempDir
    Path dir;

    /** @return the failure {@code f} completes with within the deadline and its margin, which must be a DeadlineExceeded */
    private static DbException.DeadlineExceeded deadlineExceeded(Future<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(DEADLINE.toMillis() + LATE_MS, MILLISECONDS),
            "failed within the deadline of " + DEADLINE.toMillis() + " ms and " + LATE_MS + " ms more");
        return assertInstanceOf(DbException.DeadlineExceeded.class, e.getCause());
    }

    private static long msSince(long start) {
        return (System.nanoTime() - start) / 1_000_000;
    }

    /** @return how the engine of {@link Engines#builder} names itself in messages */
    private String engine() {
        if (Engines.memory()) return "the in-memory engine";
        return Engines.lmdb() ? "LMDB in " + dir : "PostgreSQL at ";
    }

    /**
     * The writer held inside a write query: that write has begun, so at its deadline it fails saying
     * its outcome is unknown; once the writer goes on it commits all the same, is counted once, and
     * its change feed publishes it. A write queued behind it fails at its own deadline saying it is
     * not applied, and never runs.
     */
    @Test
    void aBegunWriteIsAnsweredOutcomeUnknownAndStillCommitsAQueuedOneIsWithdrawn() throws Exception {
        try (Db db = Engines.builder(dir).deadline(DEADLINE).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            ChangeFeed<Integer, String> feed = db.changeFeed(t, 100);
            long seqBefore = feed.lastSeq();
            DbStats before = db.stats();
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            AtomicInteger queuedRuns = new AtomicInteger();
            long begunAt = System.nanoTime();
            QueryFuture<Object> begun = db.write(txn -> {
                t.put(txn, 1, "begun");
                inside.countDown();
                if (!release.await(60, SECONDS)) throw new IllegalStateException("never released");
                return null;
            });
            DbException.DeadlineExceeded unknown;
            try {
                assertTrue(inside.await(30, SECONDS), "the writer began the write");
                long queuedAt = System.nanoTime();
                QueryFuture<Object> queued = db.write(txn -> {
                    queuedRuns.incrementAndGet();
                    t.put(txn, 2, "queued");
                    return null;
                });

                unknown = deadlineExceeded(begun);
                long ms = msSince(begunAt);
                assertTrue(ms >= DEADLINE.toMillis(), "not before its deadline: " + ms + " ms");
                assertTrue(unknown.outcomeUnknown, unknown.getMessage());
                assertEquals(DEADLINE, unknown.deadline);
                assertTrue(unknown.getMessage().startsWith("the database did not commit this write within its deadline of 500 ms ("
                    + engine()), unknown.getMessage());
                assertTrue(unknown.getMessage().contains("it had begun and may still commit, so whether it is applied is unknown"), unknown.getMessage());
                assertTrue(unknown.getMessage().contains("IdempotencyKeys"), unknown.getMessage());

                DbException.DeadlineExceeded notApplied = deadlineExceeded(queued);
                assertTrue(msSince(queuedAt) >= DEADLINE.toMillis(), "not before its deadline");
                assertFalse(notApplied.outcomeUnknown, notApplied.getMessage());
                assertTrue(notApplied.getMessage().startsWith("the database did not begin this write within its deadline of 500 ms ("
                    + engine()), notApplied.getMessage());
                assertTrue(notApplied.getMessage().contains("it was withdrawn and never runs, so it is not applied"), notApplied.getMessage());
                assertInstanceOf(DbException.Unavailable.class, notApplied, "answered as the database out of reach: 503");
            } finally {
                release.countDown();
            }

            db.write(txn -> null).get(30, SECONDS);  // after the held batch: the writer went on
            assertEquals("begun", db.read(txn -> t.get(txn, 1)).get(30, SECONDS), "the write whose outcome was unknown committed");
            assertNull(db.read(txn -> t.get(txn, 2)).get(30, SECONDS), "the withdrawn write is not applied");
            assertEquals(0, queuedRuns.get(), "the withdrawn write never ran");
            CompletionException still = assertThrows(CompletionException.class, begun::join);
            assertSame(unknown, still.getCause(), "the commit's own completion of the future was ignored");

            DbStats after = db.stats();
            assertEquals(before.writes + 2, after.writes, "the begun write and the empty one, once each, the withdrawn one not: " + after);
            assertEquals(before.failedWrites, after.failedWrites, after.toString());
            assertEquals(seqBefore + 1, feed.lastSeq(), "the begun write's change set is published");
            List<ChangeSet<Integer, String>> sets = feed.read(seqBefore, 10);
            assertEquals(1, sets.size());
            assertEquals("begun", sets.get(0).changes().get(0).value());
        }
    }

    /**
     * Where reads run inline (LMDB, the in-memory engine) a read runs on its caller and is complete
     * when {@code read} returns: no deadline fails it, however long it took.
     */
    @Test
    void aReadThatRunsOnItsCallerIsNotFailedByTheDeadline() throws Exception {
        try (Db db = Db.builder(MemoryEngine.at(dir)).deadline(DEADLINE).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 1, "one"); return null; }).get(30, SECONDS);
            QueryFuture<String> slow = db.read(txn -> {
                Thread.sleep(DEADLINE.toMillis() + 2 * Deadline.TICK_MS);
                return t.get(txn, 1);
            });
            assertTrue(slow.isDone(), "complete when read returns");
            Thread.sleep(3 * Deadline.TICK_MS);  // the deadline thread looked meanwhile
            assertEquals("one", slow.getNow(null));
        }
    }

    /**
     * An engine whose reads go to read threads (as PostgreSQL's), the one reader held before its
     * transaction begins: the read it runs and the read queued behind it fail at their deadline
     * saying the database did not answer; once the reader goes on, reads answer again, and the held
     * read's late result is ignored.
     */
    @Test
    void readsThatWaitForAReaderThreadFailAtTheirDeadline() throws Exception {
        AtomicReference<CountDownLatch> hold = new AtomicReference<>();
        CountDownLatch held = new CountDownLatch(1);
        KvEngine engine = new ForwardingEngine(MemoryEngine.at(dir)) {
            @Override
            public int readThreads() {
                return 1;
            }

            @Override
            public KvTxn beginRead() {
                CountDownLatch latch = hold.get();
                if (latch != null) {
                    held.countDown();
                    try {
                        latch.await(60, SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return super.beginRead();
            }
        };
        try (Db db = Db.builder(engine).deadline(DEADLINE).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 1, "one"); return null; }).get(30, SECONDS);
            CountDownLatch latch = new CountDownLatch(1);
            hold.set(latch);
            QueryFuture<String> running;
            try {
                long start = System.nanoTime();
                running = db.read(txn -> t.get(txn, 1));
                assertTrue(held.await(30, SECONDS), "the read thread took the read");
                QueryFuture<String> queued = db.read(txn -> t.get(txn, 1));
                DbException.DeadlineExceeded late = deadlineExceeded(running);
                assertTrue(msSince(start) >= DEADLINE.toMillis(), "not before its deadline");
                assertFalse(late.outcomeUnknown);
                assertEquals("the database did not answer this read within its deadline of 500 ms (the in-memory engine); retry shortly",
                    late.getMessage());
                assertFalse(deadlineExceeded(queued).outcomeUnknown);
            } finally {
                hold.set(null);
                latch.countDown();
            }
            assertEquals("one", db.read(txn -> t.get(txn, 1)).get(30, SECONDS), "reads answer again");
            assertInstanceOf(DbException.DeadlineExceeded.class, assertThrows(CompletionException.class, running::join).getCause(),
                "the held read's late result was ignored");
        }
    }

    /**
     * {@code Duration.ZERO}: no deadline, as before: a write held longer than the default deadline
     * commits and is answered so, and so does the write queued behind it.
     */
    @Test
    void withTheDeadlineOffWritesWaitAsLongAsTheyTake() throws Exception {
        try (Db db = Db.builder(MemoryEngine.at(dir)).deadline(Duration.ZERO).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            QueryFuture<Object> begun = db.write(txn -> {
                t.put(txn, 1, "begun");
                inside.countDown();
                if (!release.await(60, SECONDS)) throw new IllegalStateException("never released");
                return null;
            });
            QueryFuture<Object> queued;
            try {
                assertTrue(inside.await(30, SECONDS));
                queued = db.write(txn -> { t.put(txn, 2, "queued"); return null; });
                Thread.sleep(Db.DEFAULT_DEADLINE.toMillis() + 5 * Deadline.TICK_MS);
                assertFalse(begun.isDone(), "still waiting past the default deadline");
                assertFalse(queued.isDone());
            } finally {
                release.countDown();
            }
            assertNull(begun.get(30, SECONDS));
            assertNull(queued.get(30, SECONDS));
            assertEquals("queued", db.read(txn -> t.get(txn, 2)).get(30, SECONDS));
        }
    }

    @Test
    void aDeadlineIsZeroOrATickToADay() {
        Db.Builder b = Engines.builder(dir);
        for (Duration bad : List.of(Duration.ofMillis(-1), Duration.ofMillis(Deadline.TICK_MS - 1), Duration.ofDays(1).plusMillis(1))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.deadline(bad), bad.toString());
            assertTrue(e.getMessage().startsWith("deadline must be zero (none) or 100 ms to one day, got "), e.getMessage());
        }
        b.deadline(Duration.ZERO).deadline(Duration.ofMillis(Deadline.TICK_MS)).deadline(Duration.ofDays(1));
    }
}

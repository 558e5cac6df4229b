package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.postgresql.PostgresEngine;
import kiln.db.postgresql.TestPostgres;

/**
 * Two servers over one schema take turns with the write lock. Server a hangs in the middle of a
 * batch, its transaction open and the lock held (a write query that never ends here; a paused
 * process or a lost network alike): PostgreSQL ends a's session once it has been idle in its
 * transaction for {@link PostgresEngine#WRITER_IDLE_MILLIS} ms, which lets the lock go, and
 * server b's writes go on. When a wakes, nothing of its batch commits, and its writes fail saying so.
 */
class HungWriterTest {
    @TempDir
    Path dir;

    @Test
    void aServerHungInItsBatchLosesTheWriteLockAndCommitsNothing() throws Exception {
        hangsAndLosesTheLock(true);
    }

    /** The same when the hung write query has sent no statement yet (its puts wait in memory until the commit). */
    @Test
    void aServerHungBeforeItsFirstStatementLosesTheWriteLockToo() throws Exception {
        hangsAndLosesTheLock(false);
    }

    private void hangsAndLosesTheLock(boolean readFirst) throws Exception {
        // Without the database's deadline, which would answer both writes first (at 5 s, the hung one's
        // outcome unknown, b's too while it waits for the lock): here the engine's own answers are watched.
        try (Db a = Db.builder(TestPostgres.engine(dir)).deadline(Duration.ZERO).open();
             Db b = Db.builder(TestPostgres.engine(dir)).deadline(Duration.ZERO).open()) {
            Table<Integer, String> ta = a.table("notes", Codec.INT, Codec.STRING);
            Table<Integer, String> tb = b.table("notes", Codec.INT, Codec.STRING);
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch wake = new CountDownLatch(1);
            QueryFuture<Object> hung = a.write(txn -> {
                if (readFirst) ta.get(txn, 0);  // a statement of its own
                ta.put(txn, 1, "from the hung server");
                inside.countDown();
                wake.await(60, TimeUnit.SECONDS);
                return null;
            });
            assertTrue(inside.await(30, TimeUnit.SECONDS));

            long start = System.nanoTime();
            assertNull(b.write(txn -> { tb.put(txn, 2, "from b"); return null; }).get(30, TimeUnit.SECONDS));
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(tookMs < PostgresEngine.WRITER_IDLE_MILLIS + 5_000, "b committed after " + tookMs + " ms");

            wake.countDown();
            Throwable why = assertThrows(ExecutionException.class, () -> hung.get(30, TimeUnit.SECONDS)).getCause();
            assertSame(DbException.Unavailable.class, why.getClass(), why.toString());
            assertTrue(why.getMessage().contains("nothing of it was committed"), why.getMessage());
            assertNull(b.read(txn -> tb.get(txn, 1)).join(), "the hung server's write is not there");
            assertEquals("from b", a.read(txn -> ta.get(txn, 2)).join());
            assertNull(a.write(txn -> { ta.put(txn, 3, "a again"); return null; }).get(30, TimeUnit.SECONDS), "a writes again");
        }
    }
}

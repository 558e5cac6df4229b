package kiln.db;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A query's future can be waited on and chained by anyone, and completed only by the database. */
class QueryFutureTest {
    @TempDir Path dir;

    @Test
    void onlyTheDatabaseCompletesAQuerysFuture() {
        try (Db db = Engines.open(dir)) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            QueryFuture<Integer> read = db.read(txn -> t.get(txn, 1, 7));
            QueryFuture<Object> write = db.write(txn -> {
                t.put(txn, 2, 2);  // another key: the read may run before or after this write commits
                return null;
            });
            for (QueryFuture<?> f : new QueryFuture<?>[] {read, write}) {
                assertThrows(UnsupportedOperationException.class, () -> f.complete(null));
                assertThrows(UnsupportedOperationException.class, () -> f.completeExceptionally(new RuntimeException()));
                assertThrows(UnsupportedOperationException.class, () -> f.cancel(true));
                assertThrows(UnsupportedOperationException.class, () -> f.obtrudeValue(null));
                assertThrows(UnsupportedOperationException.class, () -> f.obtrudeException(new RuntimeException()));
                assertThrows(UnsupportedOperationException.class, () -> f.completeAsync(() -> null));
                assertThrows(UnsupportedOperationException.class, () -> f.orTimeout(1, TimeUnit.SECONDS));
                assertThrows(UnsupportedOperationException.class, () -> f.completeOnTimeout(null, 1, TimeUnit.SECONDS));
            }
            assertEquals(7, read.join());
            write.join();
            assertEquals(2, db.read(txn -> t.get(txn, 2)).join(), "the write the caller could not cancel is committed");

            QueryFuture<Integer> again = db.read(txn -> t.get(txn, 2));
            again.join();  // complete before the copy (on PostgreSQL a read completes on a read thread)
            CompletableFuture<Integer> copy = again.copy();
            assertFalse(copy instanceof QueryFuture, "a derived future is the caller's own");
            assertDoesNotThrow(() -> copy.complete(5));
            assertEquals(2, copy.join(), "the copy was complete already");
        }
    }

    /**
     * A join() the guard refuses (a fiber's carrier) withdraws a write still in the writer's queue, so
     * that a client retrying after the error does not write twice; a write already taken commits.
     */
    @Test
    void aRefusedJoinWithdrawsAWriteNotYetTakenAndSaysWhenItWasTaken() throws Exception {
        Thread refused = Thread.currentThread();
        try (Db db = Engines.open(dir)) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            QueryFuture.refuseBlockingWhere(() -> Thread.currentThread() == refused ? "on the test's refused thread" : null);
            QueryFuture<Object> taken;
            QueryFuture<Object> queued;
            java.util.concurrent.CountDownLatch inside = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            taken = db.write(txn -> {
                t.put(txn, 1, 1);
                inside.countDown();
                release.await(30, TimeUnit.SECONDS);
                return null;
            });
            assertTrue(inside.await(30, TimeUnit.SECONDS));
            try {
                queued = db.write(txn -> { t.put(txn, 2, 2); return null; });
                IllegalStateException early = assertThrows(IllegalStateException.class, queued::join);
                assertTrue(early.getMessage().contains("withdrawn before it ran"), early.getMessage());
                assertTrue(queued.isCompletedExceptionally(), "its future failed with the refusal");
                IllegalStateException late = assertThrows(IllegalStateException.class, taken::join);
                assertTrue(late.getMessage().contains("had already begun and commits anyway"), late.getMessage());
            } finally {
                release.countDown();
            }
            QueryFuture.refuseBlockingWhere(() -> null);
            taken.join();
            db.write(txn -> { t.put(txn, 3, 3); return null; }).join();  // queued after the withdrawn one
            assertEquals(1, db.read(txn -> t.get(txn, 1)).join(), "the taken write committed");
            assertNull(db.read(txn -> t.get(txn, 2)).join(), "the withdrawn write never ran");
            assertEquals(3, db.read(txn -> t.get(txn, 3)).join());
        } finally {
            QueryFuture.refuseBlockingWhere(() -> null);
        }
    }
}

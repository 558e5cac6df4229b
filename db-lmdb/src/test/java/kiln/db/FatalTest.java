package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An error after which LMDB must not be used again makes the database fatal: every later query
 * fails with one typed exception, health says so, and the owner is told once. The failure here is
 * injected for real: the data file's pages are overwritten under the open environment, as a failing
 * disk or a stray write would. (An I/O error on fsync and LMDB's panic after a failed meta-page
 * write are injected through the power-cut filesystem, powercut/.)
 */
class FatalTest {
    @TempDir Path dir;

    @Test
    void aCorruptedPageMakesEveryLaterQueryFailFatalAndTellsTheOwnerOnce() throws Exception {
        AtomicReference<DbException.Fatal> told = new AtomicReference<>();
        AtomicInteger tellings = new AtomicInteger();
        CountDownLatch toldOnce = new CountDownLatch(1);
        Db db = Db.builder(dir).onFatal(f -> {
            told.set(f);
            tellings.incrementAndGet();
            toldOnce.countDown();
        }).open();
        try {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            db.write(txn -> {
                for (int i = 0; i < 1000; i++) t.put(txn, i, i);
                return null;
            }).join();
            assertTrue(db.health().isOk());

            // every page after LMDB's two meta pages: the main database's root and the table's pages
            try (FileChannel data = FileChannel.open(dir.resolve("data.mdb"), StandardOpenOption.WRITE)) {
                ByteBuffer zeros = ByteBuffer.allocate((int) data.size() - 8192);
                data.write(zeros, 8192);
            }

            Throwable read = assertThrows(CompletionException.class, () -> db.read(txn -> t.get(txn, 7)).join()).getCause();
            DbException.Fatal fatal = assertInstanceOf(DbException.Fatal.class, read);
            assertTrue(fatal.getMessage().contains("is unusable: the data file is corrupted") && fatal.getMessage().contains("restart"),
                fatal.getMessage());
            assertSame(fatal, assertThrows(CompletionException.class, () -> db.write(txn -> { t.put(txn, 1, 2); return null; }).join()).getCause(),
                "a later write fails with the same error, at once");
            assertSame(fatal, assertThrows(CompletionException.class, () -> db.read(txn -> 1).join()).getCause(),
                "even a read that touches no page");
            assertFalse(db.health().isOk());
            assertEquals(fatal.getMessage(), db.health().problem());
            assertTrue(toldOnce.await(10, TimeUnit.SECONDS), "onFatal was not called");
            assertSame(fatal, told.get());
            Thread.sleep(100);
            assertEquals(1, tellings.get(), "told once");
        } finally {
            db.close();
        }
    }
}

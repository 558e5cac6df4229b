package kiln.db;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Holds the writer thread inside one write query until {@link #open()}, so a test can queue writes
 * behind it and know exactly which writes are waiting when the writer moves on: batching becomes
 * deterministic instead of depending on disk or scheduler speed. Always {@link #open()} it in a
 * {@code finally}, or closing the database waits for the gate's timeout.
 */
final class WriterGate {
    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch release = new CountDownLatch(1);

    /** Queues the gate write and returns once the writer thread is inside it. */
    WriterGate(Db db) throws InterruptedException {
        db.write(txn -> {
            entered.countDown();
            if (!release.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("gate never opened");
            return null;
        });
        assertTrue(entered.await(30, TimeUnit.SECONDS), "the writer thread never ran the gate write");
    }

    /** Lets the writer go on. */
    void open() {
        release.countDown();
    }
}

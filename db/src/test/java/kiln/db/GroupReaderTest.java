package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads on an engine whose reads block ({@link KvEngine#readThreads}): here the in-memory engine
 * told to behave so. Reads waiting at once share one read transaction; a read the engine fails ends
 * its group's transaction and the reads after it go on in a fresh one; each read sees what was
 * committed before it was asked for.
 */
class GroupReaderTest {
    @TempDir
    Path dir;

    /** MemoryEngine with two read threads, counting the read transactions begun. */
    private static final class Blocking extends ForwardingEngine {
        final AtomicInteger readTxns = new AtomicInteger();

        Blocking(KvEngine inner) {
            super(inner);
        }

        @Override
        public int readThreads() {
            return 2;
        }

        @Override
        public KvTxn beginRead() {
            readTxns.incrementAndGet();
            return super.beginRead();
        }
    }

    @Test
    void readsWaitingAtOnceShareATransactionAndAnEngineFailureEndsOnlyItsOwn() throws Exception {
        Blocking engine = new Blocking(MemoryEngine.at(dir));
        try (Db db = Db.builder(engine).open()) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            db.write(txn -> {
                for (int i = 0; i < 200; i++) t.put(txn, i, i * 10);
                return null;
            }).join();
            CountDownLatch queued = new CountDownLatch(1);
            List<QueryFuture<Integer>> held = new ArrayList<>();
            for (int i = 0; i < 2; i++) {  // one per read thread, each holding its thread until the rest are queued
                held.add(db.read(txn -> {
                    queued.await(30, TimeUnit.SECONDS);
                    return t.get(txn, 0);
                }));
            }
            Thread.sleep(100);  // both read threads inside their reads
            int before = engine.readTxns.get();
            List<QueryFuture<Integer>> reads = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                int key = i;
                if (i == 50) {
                    reads.add(db.read(txn -> {
                        throw new DbException.Unavailable("the engine lost this read's connection", null);
                    }));
                } else {
                    reads.add(db.read(txn -> t.get(txn, key)));
                }
            }
            queued.countDown();
            for (QueryFuture<Integer> h : held) assertEquals(0, h.get(30, TimeUnit.SECONDS));
            for (int i = 0; i < 100; i++) {
                if (i == 50) {
                    ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, reads.get(50)::get);
                    assertInstanceOf(DbException.Unavailable.class, e.getCause());
                } else {
                    assertEquals(i * 10, reads.get(i).get(30, TimeUnit.SECONDS), "read " + i);
                }
            }
            int groups = engine.readTxns.get() - before;
            // 100 reads, at most 64 per transaction, one more after the failure, spread over two threads
            assertTrue(groups <= 5, "100 reads waiting at once took " + groups + " read transactions");
            assertTrue(groups >= 2, groups + " read transactions");
        }
    }

    @Test
    void aReadSeesEveryWriteAcknowledgedBeforeIt() {
        try (Db db = Db.builder(new Blocking(MemoryEngine.at(dir))).open()) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            for (int i = 0; i < 200; i++) {
                int v = i;
                db.write(txn -> {
                    t.put(txn, 1, v);
                    return null;
                }).join();
                assertEquals(v, db.read(txn -> t.get(txn, 1)).join());
            }
        }
    }
}

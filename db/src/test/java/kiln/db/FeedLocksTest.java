package kiln.db;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A change feed holds its lock only to decide, never across a round trip to the engine or while its
 * readers' callbacks run: over a shared engine (PostgreSQL) the listener's catch-up reads the log
 * while the one writer publishes, and a reader's callback may do anything.
 */
class FeedLocksTest {
    @TempDir Path dir;

    /** Before: catchUp held the feed's lock through its log read, and the writer's publish (so every write) waited for it. */
    @Test
    void aCatchUpReadingTheLogDoesNotHoldUpTheWritersPublish() throws Exception {
        CountDownLatch inRead = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        KvEngine engine = new ForwardingEngine(MemoryEngine.at(dir)) {
            @Override
            public KvTxn beginRead() {
                if (Thread.currentThread().getName().equals("catch-up")) {
                    inRead.countDown();
                    try {
                        release.await(30, SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return super.beginRead();
            }
        };
        try (Db db = Db.builder(engine).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            ChangeFeed<Integer, String> feed = db.changeFeed(t, 100);
            Thread catchUp = new Thread(feed::catchUp, "catch-up");
            catchUp.start();
            try {
                assertTrue(inRead.await(30, SECONDS), "the catch-up reads the log");
                db.write(txn -> { t.put(txn, 1, "one"); return null; }).get(30, SECONDS);
                assertEquals(1, feed.lastSeq(), "published while the catch-up's read waits");
            } finally {
                release.countDown();
                catchUp.join(30_000);
            }
            assertEquals(1, feed.lastSeq());
        }
    }

    /**
     * Before: a publish read the sets another server logged before its own holding the feed's lock,
     * so that a catch-up (the listener's, a reader's) or a wake waited for the round trip.
     */
    @Test
    void aPublishReadingAnotherServersSetsFromTheLogHoldsNoLock() throws Exception {
        java.util.concurrent.atomic.AtomicReference<Object> watched = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger writerReads = new java.util.concurrent.atomic.AtomicInteger();
        AtomicBoolean held = new AtomicBoolean();
        KvEngine engine = new ForwardingEngine(MemoryEngine.at(dir)) {
            @Override
            public KvTxn beginRead() {
                Object feed = watched.get();
                if (feed != null && Thread.currentThread().getName().equals("kiln-db-writer")) {
                    writerReads.incrementAndGet();
                    if (Thread.holdsLock(feed)) held.set(true);
                }
                return super.beginRead();
            }
        };
        try (Db other = Db.builder(MemoryEngine.at(dir)).open(); Db db = Db.builder(engine).open()) {  // two servers over one store
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            ChangeFeed<Integer, String> feed = db.changeFeed(t, 100);
            Table<Integer, String> theirs = other.table("notes", Codec.INT, Codec.STRING);
            other.changeFeed(theirs, 100);
            other.write(txn -> { theirs.put(txn, 1, "theirs"); return null; }).get(30, SECONDS);  // set 1, unheard of here
            watched.set(feed);
            db.write(txn -> { t.put(txn, 2, "mine"); return null; }).get(30, SECONDS);  // set 2: its publish reads set 1 first
            assertEquals(2, feed.lastSeq());
            assertEquals(2, feed.read(0, 10).size(), "set 1 kept from the log, then set 2");
            assertTrue(writerReads.get() > 0, "the publish read the log");
            assertFalse(held.get(), "the publish read the log holding the feed's lock");
        }
    }

    /**
     * Before: a watch whose snapshot was older than the feed's memory read the missed sets from the
     * log holding the watches' lock, so that every publish on the feed (the writer announcing to the
     * watches) waited for that round trip.
     */
    @Test
    void aWatchReadingTheLogDoesNotHoldUpAPublish() throws Exception {
        AtomicBoolean armed = new AtomicBoolean();
        CountDownLatch inRead = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        KvEngine engine = new ForwardingEngine(MemoryEngine.at(dir)) {
            @Override
            public KvTxn beginRead() {
                if (Thread.currentThread().getName().equals("watcher") && armed.compareAndSet(true, false)) {
                    inRead.countDown();
                    try {
                        release.await(30, SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return super.beginRead();
            }
        };
        try (Db db = Db.builder(engine).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            ChangeFeed<Integer, String> feed = db.changeFeed(t, 10_000);
            CompletableFuture<CompletableFuture<ChangeSet<Integer, String>>> watch = new CompletableFuture<>();
            Thread watcher = new Thread(() -> {
                try {
                    watch.complete(db.read(txn -> {
                        // more sets than memory keeps are published after this snapshot: the watch reads the log
                        List<CompletableFuture<?>> writes = new ArrayList<>();
                        for (int i = 0; i <= ChangeFeed.MAX_IN_MEMORY; i++) {
                            int k = 100 + i;
                            writes.add(db.write(w -> { t.put(w, k, "n"); return null; }));
                        }
                        CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0])).get(30, SECONDS);
                        armed.set(true);
                        return feed.watch(txn, 1);
                    }).get(30, SECONDS));
                } catch (Exception e) {
                    watch.completeExceptionally(e);
                }
            }, "watcher");
            watcher.start();
            try {
                assertTrue(inRead.await(30, SECONDS), "the watch reads the log");
                db.write(txn -> { t.put(txn, 2, "two"); return null; }).get(10, SECONDS);  // published, announced to the watches
            } finally {
                release.countDown();
                watcher.join(30_000);
            }
            CompletableFuture<ChangeSet<Integer, String>> one = watch.get(30, SECONDS);
            assertFalse(one.isDone(), "row 1 has not changed");
            db.write(txn -> { t.put(txn, 1, "one"); return null; }).get(30, SECONDS);
            assertEquals("one", one.get(30, SECONDS).changes().get(0).value(), "the watch, registered after its read, fires");
        }
    }

    /** Before: a read of the log ran on its caller (over PostgreSQL, a round trip on a fiber's carrier). */
    @Test
    void readAsyncReadsTheLogOnTheDatabasesReaderThreadsNotOnItsCaller() throws Exception {
        java.util.Set<String> readOn = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.function.Supplier<KvEngine> engine = () -> new ForwardingEngine(MemoryEngine.at(dir)) {
            @Override
            public int readThreads() {
                return 2;  // reads go to read threads, as over PostgreSQL
            }

            @Override
            public KvTxn beginRead() {
                readOn.add(Thread.currentThread().getName());
                return super.beginRead();
            }
        };
        try (Db db = Db.builder(engine.get()).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            db.changeFeed(t, 100);
            for (int i = 1; i <= 3; i++) {
                int k = i;
                db.write(txn -> { t.put(txn, k, "n" + k); return null; }).get(30, SECONDS);
            }
        }
        try (Db db = Db.builder(engine.get()).open()) {  // memory keeps nothing after a restart: the log must be read
            ChangeFeed<Integer, String> feed = db.changeFeed(db.table("notes", Codec.INT, Codec.STRING), 100);
            readOn.clear();
            assertEquals(3, feed.readAsync(0, 10).get(30, SECONDS).size());
            assertEquals(1, feed.prefix(2).readAsync(0, 10).get(30, SECONDS).sets().size());
            String me = Thread.currentThread().getName();
            assertFalse(readOn.contains(me), "the caller began a read: " + readOn);
            assertTrue(readOn.stream().allMatch(n -> n.startsWith("kiln-db-read-")), readOn.toString());
            feed.read(0, 10);
            assertTrue(readOn.contains(me), "read() reads on its caller: " + readOn);
        }
    }

    /** Before: wake() completed the readers' futures inside the feed's lock, so their callbacks ran holding it. */
    @Test
    void readersCallbacksRunWithoutTheFeedsLock() throws Exception {
        try (Db db = Db.builder(MemoryEngine.at(dir)).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            ChangeFeed<Integer, String> feed = db.changeFeed(t, 100);
            PrefixFeed<Integer, String> row = feed.prefix(1);
            AtomicBoolean held = new AtomicBoolean();
            CompletableFuture<Void> all = CompletableFuture.allOf(
                feed.after(0).thenRun(() -> held.compareAndSet(false, Thread.holdsLock(feed))),
                row.after(0).thenRun(() -> held.compareAndSet(false, Thread.holdsLock(feed))),
                db.read(txn -> feed.watch(txn, 1)).join().thenRun(() -> held.compareAndSet(false, Thread.holdsLock(feed))));
            db.write(txn -> { t.put(txn, 1, "one"); return null; }).get(30, SECONDS);
            all.get(30, SECONDS);
            assertFalse(held.get(), "a reader's callback ran holding the feed's lock");
        }
    }
}

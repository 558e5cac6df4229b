package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The change feed: committed write queries in order, numbered durably, waited on without polling; watches on keys. */
class ChangeFeedTest {
    @TempDir Path dir;
    Db db;
    Table<Integer, Integer> table;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    private ChangeFeed<Integer, Integer> open(int window) {
        db = Engines.builder(dir).maxWatches(3).open();
        table = db.table("t", Codec.INT, Codec.INT);
        return db.changeFeed(table, window);
    }

    private void put(int k, int v) {
        db.write(txn -> { table.put(txn, k, v); return null; }).join();
    }

    /**
     * readAsync gives what read gives: from memory, complete at once; from the log (after a restart
     * memory holds nothing) as a read query, on every engine; an expired position as a failed future.
     */
    @Test
    void readAsyncGivesWhatReadGivesAtOnceFromMemoryAndFromTheLogAsARead() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        for (int i = 1; i <= 5; i++) put(i, 10 * i);
        QueryFuture<List<ChangeSet<Integer, Integer>>> kept = feed.readAsync(2, 10);
        assertTrue(kept.isDone(), "in memory: complete at once");
        assertEquals(List.of(3L, 4L, 5L), kept.join().stream().map(ChangeSet::seq).toList());
        assertEquals(feed.read(2, 10), kept.join());
        PrefixFeed.Changes<Integer, Integer> row = feed.prefix(4).readAsync(feed.prefix(4).lastSeq(), 10).join();
        assertEquals(List.of(), row.sets());
        db.close();

        feed = open(100);  // reopened: the log has every set, memory none
        List<ChangeSet<Integer, Integer>> logged = feed.readAsync(0, 10).get(30, TimeUnit.SECONDS);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), logged.stream().map(ChangeSet::seq).toList());
        assertEquals(feed.read(0, 10), logged);
        PrefixFeed.Changes<Integer, Integer> fromBack = feed.prefix(4).readAsync(0, 10).get(30, TimeUnit.SECONDS);
        assertEquals(List.of(4L), fromBack.sets().stream().map(ChangeSet::seq).toList());
        assertEquals(List.of(new ChangeSet.Change<>(4, 40)), fromBack.sets().get(0).changes());
        assertEquals(5, fromBack.through());
        ChangeFeed<Integer, Integer> reopened = feed;
        java.util.concurrent.ExecutionException ahead = assertThrows(java.util.concurrent.ExecutionException.class,
            () -> reopened.readAsync(99, 10).get(30, TimeUnit.SECONDS));
        assertTrue(ahead.getCause() instanceof DbException.Expired, String.valueOf(ahead.getCause()));
    }

    @Test
    void eachWriteQueryIsOneNumberedSetOfItsChangesInOrder() {
        ChangeFeed<Integer, Integer> feed = open(100);
        assertEquals(0, feed.lastSeq());
        put(1, 10);
        db.write(txn -> {
            table.put(txn, 2, 20);
            table.put(txn, 3, 30);
            table.delete(txn, 1);
            return null;
        }).join();
        assertEquals(2, feed.lastSeq());
        List<ChangeSet<Integer, Integer>> sets = feed.read(0, 10);
        assertEquals(List.of(1L, 2L), sets.stream().map(ChangeSet::seq).toList());
        assertEquals(List.of(new ChangeSet.Change<>(1, 10)), sets.get(0).changes());
        assertEquals(List.of(new ChangeSet.Change<>(2, 20), new ChangeSet.Change<>(3, 30), new ChangeSet.Change<>(1, null)),
            sets.get(1).changes());
        assertTrue(sets.get(1).changes().get(2).deleted());
        assertTrue(sets.get(1).committedAt() > 1_700_000_000_000_000L, "microseconds since the epoch");
        assertEquals(List.of(2L), feed.read(1, 10).stream().map(ChangeSet::seq).toList());
        assertEquals(List.of(), feed.read(2, 10));
        assertEquals(1, feed.read(0, 1).size(), "at most max sets");
    }

    @Test
    void aRolledBackQueryIsNotRecordedAndItsBatchMatesAre() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        WriterGate gate = new WriterGate(db);
        QueryFuture<Object> first;
        QueryFuture<Object> failing;
        QueryFuture<Object> third;
        try {
            first = db.write(txn -> { table.put(txn, 1, 1); return null; });
            failing = db.write(txn -> {
                table.put(txn, 2, 2);
                throw new IllegalStateException("rolled back");
            });
            third = db.write(txn -> { table.put(txn, 3, 3); return null; });
        } finally {
            gate.open();
        }
        first.join();
        third.join();
        assertThrows(CompletionException.class, failing::join);
        List<ChangeSet<Integer, Integer>> sets = feed.read(0, 10);
        assertEquals(List.of(1, 3), sets.stream().map(s -> s.changes().get(0).key()).toList());
        assertEquals(List.of(1L, 2L), sets.stream().map(ChangeSet::seq).toList(), "no gap for the rolled-back query");
    }

    @Test
    void writesToOtherTablesAreNotRecorded() {
        ChangeFeed<Integer, Integer> feed = open(100);
        Table<Integer, Integer> other = db.table("other", Codec.INT, Codec.INT);
        db.write(txn -> { other.put(txn, 1, 1); return null; }).join();
        assertEquals(0, feed.lastSeq());
        assertFalse(other.isRecorded(), "a table without a feed records nothing");
    }

    @Test
    void afterCompletesOnlyOnceANewerSetIsDurable() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        QueryFuture<Void> waiting = feed.after(0);
        assertFalse(waiting.isDone());
        assertSame(waiting, feed.after(0), "every reader waits on the same future: waiting again registers nothing new");
        put(1, 1);
        waiting.get(10, TimeUnit.SECONDS);
        assertTrue(feed.after(0).isDone(), "a newer set exists: done at once");
        assertFalse(feed.after(1).isDone());
    }

    @Test
    void aQuietFeedStillWakesItsReadersNowAndThenSoThoseThatLeftLetGo() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        QueryFuture<Void> waiting = feed.after(0);
        feed.renewIfOlder(Long.MAX_VALUE);
        assertFalse(waiting.isDone(), "not old enough");
        feed.renewIfOlder(0);  // what the idle writer does after a minute without a publish
        waiting.get(10, TimeUnit.SECONDS);  // woken with nothing new
        assertEquals(List.of(), feed.read(0, 10));
        QueryFuture<Void> again = feed.after(0);
        assertFalse(again.isDone(), "a new future to wait on");
        assertFalse(again == waiting);
    }

    @Test
    void aReaderThatLagsBeyondTheWindowIsToldToReloadAndAReaderAheadToo() {
        ChangeFeed<Integer, Integer> feed = open(5);
        for (int i = 1; i <= 8; i++) put(i, i);
        assertEquals(4, feed.oldestSeq());
        assertEquals(List.of(4L, 5L, 6L, 7L, 8L), feed.read(3, 10).stream().map(ChangeSet::seq).toList());
        DbException.Expired behind = assertThrows(DbException.Expired.class, () -> feed.read(2, 10));
        assertTrue(behind.getMessage().contains("older than the feed of 't' keeps"), behind.getMessage());
        DbException.Expired ahead = assertThrows(DbException.Expired.class, () -> feed.read(9, 10));
        assertTrue(ahead.getMessage().contains("ahead"), ahead.getMessage());
    }

    @Test
    void numberingAndTheWindowSurviveAReopenAndOldSetsComeFromTheLog() {
        open(50);
        for (int i = 1; i <= 30; i++) put(i, i * 10);
        db.close();
        db = Engines.open(dir);
        table = db.table("t", Codec.INT, Codec.INT);
        ChangeFeed<Integer, Integer> feed = db.changeFeed(table, 20);  // a smaller window than before
        assertEquals(30, feed.lastSeq());
        assertEquals(11, feed.oldestSeq());
        List<ChangeSet<Integer, Integer>> fromLog = feed.read(25, 10);
        assertEquals(List.of(26L, 27L, 28L, 29L, 30L), fromLog.stream().map(ChangeSet::seq).toList());
        assertEquals(new ChangeSet.Change<>(26, 260), fromLog.get(0).changes().get(0));
        assertTrue(fromLog.get(0).committedAt() > 0);
        assertThrows(DbException.Expired.class, () -> feed.read(9, 10));
        put(99, 99);
        assertEquals(31, feed.lastSeq());
    }

    @Test
    void setsBeyondWhatMemoryKeepsAreReadFromTheLog() {
        ChangeFeed<Integer, Integer> feed = open(ChangeFeed.MAX_IN_MEMORY + 100);
        db.write(txn -> {
            for (int i = 0; i < ChangeFeed.MAX_IN_MEMORY + 50; i++) table.put(txn, i, i);
            return null;
        }).join();
        for (int i = 0; i < ChangeFeed.MAX_IN_MEMORY + 50; i++) {
            int k = i;
            db.write(txn -> { table.put(txn, k, -k); return null; });
        }
        put(-1, -1);  // after every queued write
        List<ChangeSet<Integer, Integer>> sets = feed.read(1, 20);
        assertEquals(20, sets.size());
        for (int i = 0; i < 20; i++) {
            assertEquals(2 + i, sets.get(i).seq());
            assertEquals(new ChangeSet.Change<>(i, -i), sets.get(i).changes().get(0));
        }
    }

    @Test
    void aWatchFiresAtTheFirstCommittedChangeOfItsKeyOnly() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        put(1, 1);
        CompletableFuture<ChangeSet<Integer, Integer>> watch = db.read(txn -> feed.watch(txn, 1)).join();
        put(2, 2);
        assertFalse(watch.isDone(), "another key changed");
        put(1, 11);
        ChangeSet<Integer, Integer> set = watch.get(10, TimeUnit.SECONDS);
        assertEquals(3, set.seq());
        assertEquals(new ChangeSet.Change<>(1, 11), set.changes().get(0));
    }

    @Test
    void aChangeBetweenTheReadAndTheWatchIsNotMissed() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        put(1, 1);
        CompletableFuture<ChangeSet<Integer, Integer>> watch = db.read(txn -> {
            table.get(txn, 1);
            put(1, 2);  // commits after this snapshot, before the watch
            return feed.watch(txn, 1);
        }).join();
        assertTrue(watch.isDone(), "the value read is already stale: the watch fires at once");
        assertEquals(2, watch.get().seq());
    }

    @Test
    void watchesAreCappedAndAGivenUpWatchFreesItsPlace() {
        ChangeFeed<Integer, Integer> feed = open(100);
        List<CompletableFuture<ChangeSet<Integer, Integer>>> watches = db.read(txn ->
            List.of(feed.watch(txn, 1), feed.watch(txn, 2), feed.watch(txn, 3))).join();
        CompletableFuture<ChangeSet<Integer, Integer>> fourth = db.read(txn -> feed.watch(txn, 4)).join();
        CompletionException refused = assertThrows(CompletionException.class, fourth::join);
        assertTrue(refused.getCause() instanceof DbException.TooManyWatches, refused.toString());
        watches.get(0).cancel(false);
        CompletableFuture<ChangeSet<Integer, Integer>> again = db.read(txn -> feed.watch(txn, 4)).join();
        assertFalse(again.isDone(), "the cancelled watch's place was free");
        put(4, 4);
        assertEquals(4, again.join().changes().get(0).key());
        put(2, 2);
        assertEquals(2, watches.get(1).join().changes().get(0).key(), "a fired watch frees its place too");
    }

    /** A feed nobody waits on hands nothing to the wake thread: its writes cost what they did before there was one. */
    @Test
    void aFeedNobodyWaitsOnWakesNobody() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        QueryFuture<Void> unwatched = feed.after(0);
        put(1, 1);
        put(2, 2);
        assertTrue(unwatched.isDone(), "completed where it was published: nothing waited on it");
        assertFalse(feed.wakeThreadStarted());
        feed.after(2).thenRun(() -> { });
        put(3, 3);
        assertTrue(feed.wakeThreadStarted(), "a reader waits: handed over");
    }

    /**
     * Before: the writer thread ran every waiting reader's callback (a fiber's resumption, a stream's
     * next step) after each commit, before it answered the batch's writes and took the next batch.
     */
    @Test
    void readersAreWokenOffTheWriterThreadInPublishOrderAndTheCloseLast() throws Exception {
        ChangeFeed<Integer, Integer> feed = open(100);
        List<String> woken = new CopyOnWriteArrayList<>();
        CountDownLatch release = new CountDownLatch(1);
        feed.after(0).thenRun(() -> {
            woken.add("1 on " + Thread.currentThread().getName());
            try {
                release.await(30, TimeUnit.SECONDS);  // a reader's callback that holds on
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        put(1, 1);  // answered meanwhile
        QueryFuture<Void> second = feed.after(1);
        second.thenRun(() -> woken.add("2 on " + Thread.currentThread().getName()));
        put(2, 2);  // and the writer goes on
        QueryFuture<Void> third = feed.after(2);
        CompletableFuture<Void> closed = CompletableFuture.runAsync(db::close);
        assertFalse(second.isDone(), "the second wake waits behind the first, in publish order");
        release.countDown();
        closed.get(30, TimeUnit.SECONDS);
        assertEquals(List.of("1 on kiln-feed-wake", "2 on kiln-feed-wake"), woken);
        assertFalse(second.isCompletedExceptionally(), "published before the close: woken by the publish");
        assertTrue(assertThrows(CompletionException.class, third::join).getCause() instanceof DbException.Closed, "then the close");
    }

    @Test
    void closingFailsTheWaitingReadersAndWatches() {
        ChangeFeed<Integer, Integer> feed = open(100);
        QueryFuture<Void> waiting = feed.after(0);
        CompletableFuture<ChangeSet<Integer, Integer>> watch = db.read(txn -> feed.watch(txn, 1)).join();
        db.close();
        assertTrue(assertThrows(CompletionException.class, waiting::join).getCause() instanceof DbException.Closed);
        assertTrue(assertThrows(CompletionException.class, watch::join).getCause() instanceof DbException.Closed);
        assertTrue(feed.after(0).isCompletedExceptionally(), "a reader that waits after close learns it at once");
    }

    @Test
    void aTableWithAFeedIsOneObject() {
        ChangeFeed<Integer, Integer> feed = open(100);
        assertSame(table, db.table("t", Codec.INT, Codec.INT));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> db.table("t", Codec.INT, Codec.LONG));
        assertTrue(e.getMessage().contains("open the table once"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> db.changeFeed(table, 7));
        CompletionException inWrite = assertThrows(CompletionException.class, () -> db.write(txn -> feed.watch(txn, 1)).join());
        assertTrue(inWrite.getCause() instanceof IllegalStateException, inWrite.toString());
    }
}

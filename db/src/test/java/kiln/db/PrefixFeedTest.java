package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Change feeds per key prefix: woken only by their prefix's commits, given only its changes, resumable from the log. */
class PrefixFeedTest {
    @TempDir Path dir;
    Db db;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    private void say(Table<Tuple, String> t, String room, long id, String text) {
        db.write(txn -> {
            t.put(txn, Tuple.of(room, id), text);
            return null;
        }).join();
    }

    private static List<Object> keys(PrefixFeed.Changes<Tuple, String> c) {
        List<Object> out = new ArrayList<>();
        for (ChangeSet<Tuple, String> set : c.sets()) {
            for (ChangeSet.Change<Tuple, String> ch : set.changes()) out.add(ch.key());
        }
        return out;
    }

    @Test
    void aRoomsReadersAreWokenOnlyByItsCommitsAndSeeOnlyItsChanges() throws Exception {
        db = Engines.open(dir);
        Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
        ChangeFeed<Tuple, String> feed = db.changeFeed(messages, 1000);
        say(messages, "lobby", 1, "before anyone listened");
        PrefixFeed<Tuple, String> lobby = feed.prefix(Tuple.of("lobby"));
        PrefixFeed<Tuple, String> attic = feed.prefix(Tuple.of("attic"));
        long seenLobby = lobby.lastSeq();
        long seenAttic = attic.lastSeq();
        QueryFuture<Void> lobbyWaits = lobby.after(seenLobby);
        QueryFuture<Void> atticWaits = attic.after(seenAttic);
        assertFalse(lobbyWaits.isDone());
        say(messages, "attic", 2, "up here");
        atticWaits.get(10, TimeUnit.SECONDS);  // the attic's commit woke the attic
        assertFalse(lobbyWaits.isDone(), "and not the lobby");
        db.write(txn -> {
            messages.put(txn, Tuple.of("lobby", 3L), "hi");
            messages.put(txn, Tuple.of("lobbyist", 4L), "another room whose name goes on");
            messages.put(txn, Tuple.of("lobby\0x", 5L), "a room whose name goes on with a zero byte");
            messages.delete(txn, Tuple.of("lobby", 1L));
            return null;
        }).join();
        lobbyWaits.get(10, TimeUnit.SECONDS);
        PrefixFeed.Changes<Tuple, String> got = lobby.read(seenLobby, 100);
        assertEquals(List.of(Tuple.of("lobby", 3L), Tuple.of("lobby", 1L)), keys(got), "only the lobby's changes, in order");
        assertEquals(feed.lastSeq(), got.through());
        assertTrue(got.sets().get(0).changes().get(1).deleted());
        assertFalse(lobby.after(got.through()).isDone(), "nothing newer: it waits");
        assertEquals(List.of(Tuple.of("attic", 2L)), keys(attic.read(seenAttic, 100)));
    }

    @Test
    void oneRowIsAPrefixToo() {
        db = Engines.open(dir);
        Table<Integer, Integer> worlds = db.table("world", Codec.INT, Codec.INT);
        ChangeFeed<Integer, Integer> feed = db.changeFeed(worlds, 100);
        PrefixFeed<Integer, Integer> row42 = feed.prefix(42);
        long seen = row42.lastSeq();
        for (int id = 40; id < 45; id++) {
            int k = id;
            db.write(txn -> {
                worlds.put(txn, k, k * 10);
                return null;
            }).join();
        }
        PrefixFeed.Changes<Integer, Integer> c = row42.read(seen, 10);
        assertEquals(1, c.sets().size());
        assertEquals(420, c.sets().get(0).changes().get(0).value());
        assertEquals(feed.lastSeq(), c.through());
    }

    /**
     * A position ahead of the feed (a Last-Event-ID from another database, or from before a restore)
     * is answered the same way on a prefix feed as on its table's: Expired, naming the feed's newest,
     * by read and by readAsync; never an empty read that leaves the reader waiting for ever.
     */
    @Test
    void aPositionAheadOfTheFeedIsExpiredOnAPrefixFeedAsOnItsTable() {
        db = Engines.open(dir);
        Table<Integer, Integer> worlds = db.table("world", Codec.INT, Codec.INT);
        ChangeFeed<Integer, Integer> feed = db.changeFeed(worlds, 100);
        for (int id = 1; id <= 3; id++) {
            int k = id;
            db.write(txn -> { worlds.put(txn, k, k); return null; }).join();
        }
        PrefixFeed<Integer, Integer> row2 = feed.prefix(2);
        String table = assertThrows(DbException.Expired.class, () -> feed.read(99, 10)).getMessage();
        String prefix = assertThrows(DbException.Expired.class, () -> row2.read(99, 10)).getMessage();
        assertEquals(table, prefix);
        assertTrue(prefix.contains("ahead") && prefix.contains("whose newest is 3"), prefix);
        java.util.concurrent.CompletionException async = assertThrows(java.util.concurrent.CompletionException.class,
            () -> row2.readAsync(99, 10).join());
        assertEquals(table, async.getCause().getMessage());
    }

    /** A reader back from further than its group keeps reads the feed's log, filtered: the same sets as a reader that stayed. */
    @Test
    void aReaderFromFurtherBackReadsTheLogFiltered() {
        db = Engines.open(dir);
        Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
        ChangeFeed<Tuple, String> feed = db.changeFeed(messages, 1000);
        PrefixFeed<Tuple, String> stayed = feed.prefix(Tuple.of("r1"));
        long start = stayed.lastSeq();
        List<Object> live = new ArrayList<>();
        long seen = start;
        for (int i = 0; i < 300; i++) {
            say(messages, "r" + i % 3, i, "m" + i);
            PrefixFeed.Changes<Tuple, String> c = stayed.read(seen, 1000);
            live.addAll(keys(c));
            seen = c.through();
        }
        assertEquals(100, live.size());
        // another reader of r1 from the start: more than the group keeps, so from the log, in pages
        PrefixFeed<Tuple, String> back = feed.prefix(Tuple.of("r1"));
        List<Object> resumed = new ArrayList<>();
        long at = start;
        int pages = 0;
        while (at < feed.lastSeq()) {
            PrefixFeed.Changes<Tuple, String> c = back.read(at, 7);
            assertTrue(c.through() > at || !c.sets().isEmpty(), "a read moves on");
            resumed.addAll(keys(c));
            at = c.through();
            pages++;
        }
        assertEquals(live, resumed);
        assertTrue(pages >= 100 / 7, "pages of at most 7 sets: " + pages);
    }

    @Test
    void aGroupNobodyWaitsOnIsDroppedAndFoundAgain() throws Exception {
        db = Engines.open(dir);
        Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
        ChangeFeed<Tuple, String> feed = db.changeFeed(messages, 1000);
        PrefixFeed<Tuple, String> lobby = feed.prefix(Tuple.of("lobby"));
        long seen = lobby.lastSeq();
        assertEquals(1, feed.prefixGroups());
        feed.renewIfOlder(0);  // as the idle writer does after a minute: nobody waits, so the group goes
        assertEquals(0, feed.prefixGroups());
        QueryFuture<Void> waits = lobby.after(seen);
        assertFalse(waits.isDone());
        say(messages, "lobby", 1, "hi");
        waits.get(10, TimeUnit.SECONDS);  // the handle found its prefix's group again
        assertEquals(1, lobby.read(seen, 10).sets().size());
    }
}

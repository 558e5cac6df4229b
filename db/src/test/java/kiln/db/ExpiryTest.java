package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rows that expire: never read once expired, swept in bounded writes, recorded by the feed as expired deletes. */
class ExpiryTest {
    @TempDir Path dir;
    Db db;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    private static final Duration GONE = Duration.ofMillis(1);
    private static final Duration HOUR = Duration.ofHours(1);

    /** @return the rows the table holds, expired or not (what the sweeper has not deleted yet) */
    private long held(Table<?, ?> t) {
        return db.read(txn -> txn.kv.count(t.space)).join();
    }

    /** Waits, up to 20 s, for the sweeper to leave {@code rows} rows in {@code t}. */
    private void awaitHeld(Table<?, ?> t, long rows) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (held(t) != rows) {
            assertTrue(System.nanoTime() < deadline, "the sweeper left " + held(t) + " rows, not " + rows);
            Thread.sleep(20);
        }
    }

    @Test
    void anExpiredRowIsReadByNothing() throws Exception {
        db = Engines.open(dir);
        Table<Tuple, String> sessions = db.expiringTable("sessions", Codec.TUPLE, Codec.STRING, null);
        db.write(txn -> {
            sessions.put(txn, Tuple.of("u", 1L), "gone soon", GONE);
            sessions.put(txn, Tuple.of("u", 2L), "stays", HOUR);
            sessions.put(txn, Tuple.of("u", 3L), "no expiry");
            sessions.put(txn, Tuple.of("v", 1L), "gone soon too", GONE);
            return null;
        }).join();
        Thread.sleep(20);
        db.read(txn -> {
            assertNull(sessions.get(txn, Tuple.of("u", 1L)));
            assertEquals("stays", sessions.get(txn, Tuple.of("u", 2L)));
            assertEquals(2, sessions.count(txn));
            assertEquals(Tuple.of("u", 2L), sessions.firstKey(txn));
            assertEquals(Tuple.of("u", 3L), sessions.lastKey(txn));
            List<Object> seen = new ArrayList<>();
            sessions.scan(txn, (k, v) -> seen.add(k));
            sessions.scanPrefix(txn, Tuple.of("u"), (k, v) -> seen.add(k));
            sessions.scanBackward(txn, null, (k, v) -> seen.add(k));
            for (Page.Row<Tuple, String> r : sessions.range(txn, Range.prefix(Tuple.of("u"))).rows()) seen.add(r.key());
            assertEquals(List.of(Tuple.of("u", 2L), Tuple.of("u", 3L), Tuple.of("u", 2L), Tuple.of("u", 3L),
                Tuple.of("u", 3L), Tuple.of("u", 2L), Tuple.of("u", 2L), Tuple.of("u", 3L)), seen);
            assertEquals(2, sessions.count(txn, Range.<Tuple>all()));
            return null;
        }).join();
        assertFalse(db.write(txn -> sessions.delete(txn, Tuple.of("v", 1L))).join(), "deleting an expired row: there was none");
    }

    @Test
    void theSweeperDeletesExpiredRowsInBoundedWritesAndTheFeedSaysExpired() throws Exception {
        db = Engines.open(dir);
        Table<Long, String> cache = db.expiringTable("cache", Codec.LONG, Codec.STRING, GONE);
        ChangeFeed<Long, String> feed = db.changeFeed(cache, 100_000);
        Table<Long, String> plain = db.table("plain", Codec.LONG, Codec.STRING);
        db.write(txn -> {
            for (long k = 0; k < 2_500; k++) cache.put(txn, k, "v" + k);   // the table's default: 1 ms
            cache.put(txn, 9_999L, "kept", HOUR);
            plain.put(txn, 1L, "untouched");
            return null;
        }).join();
        long puts = feed.read(0, 10).get(0).seq();  // the puts' set: the sweeper may have begun already
        awaitHeld(cache, 1);
        List<ChangeSet<Long, String>> sweeps = feed.read(puts, 1000);
        int expired = 0;
        for (ChangeSet<Long, String> set : sweeps) {
            assertTrue(set.changes().size() <= Table.SWEEP_BATCH, "one sweep write deletes at most " + Table.SWEEP_BATCH + ": " + set.changes().size());
            for (ChangeSet.Change<Long, String> c : set.changes()) {
                assertTrue(c.deleted() && c.expired(), c.toString());
                expired++;
            }
        }
        assertEquals(2_500, expired);
        assertTrue(sweeps.size() >= 3, "2,500 rows in writes of at most 1,000: " + sweeps.size());
        assertEquals("kept", db.read(txn -> cache.get(txn, 9_999L)).join());
        assertEquals("untouched", db.read(txn -> plain.get(txn, 1L)).join());
        assertEquals(1, db.read(txn -> txn.kv.count(cache.expiries)).join(), "the schedule holds the kept row's entry");
        db.verify();
    }

    /** The sweeper looks with a read: with nothing due it commits nothing (no empty write every second). */
    @Test
    void anIdleSweeperCommitsNothing() throws Exception {
        db = Engines.open(dir);
        Table<String, String> t = db.expiringTable("t", Codec.STRING, Codec.STRING, HOUR);
        db.write(txn -> {
            t.put(txn, "k", "v");
            return null;
        }).join();
        long commits = db.stats().commits;
        Thread.sleep(2 * Sweeper.PERIOD_MS + 500);
        assertEquals(commits, db.stats().commits, "the sweeper looked at least twice and wrote nothing");
    }

    @Test
    void aPutMovesItsRowsExpiry() throws Exception {
        db = Engines.open(dir);
        Table<String, String> t = db.expiringTable("t", Codec.STRING, Codec.STRING, null);
        db.write(txn -> {
            t.put(txn, "renewed", "a", GONE);
            t.put(txn, "renewed", "b", HOUR);
            t.put(txn, "forever", "c", GONE);
            t.put(txn, "forever", "d");
            t.put(txn, "shortened", "e", HOUR);
            t.put(txn, "shortened", "f", GONE);
            return null;
        }).join();
        awaitHeld(t, 2);
        assertEquals("b", db.read(txn -> t.get(txn, "renewed")).join());
        assertEquals("d", db.read(txn -> t.get(txn, "forever")).join());
        assertEquals(1, db.read(txn -> txn.kv.count(t.expiries)).join(), "one schedule entry: the renewed row's");
    }

    @Test
    void anIndexOfAnExpiringTableNeverGivesAnExpiredRow() throws Exception {
        db = Engines.open(dir);
        Table<Long, String> sessions = db.expiringTable("sessions", Codec.LONG, Codec.STRING, null);
        Index<String, Long, String> byUser = db.index(sessions, "sessions.by-user", Codec.STRING, (id, user) -> user);
        db.write(txn -> {
            sessions.put(txn, 1L, "ada", GONE);
            sessions.put(txn, 2L, "ada", HOUR);
            sessions.put(txn, 3L, "bob", GONE);
            return null;
        }).join();
        Thread.sleep(20);
        db.read(txn -> {
            assertEquals(2L, byUser.key(txn, "ada"), "the expired row 1 is skipped");
            assertNull(byUser.get(txn, "bob"));
            assertEquals(List.of(2L), byUser.range(txn, Range.closed("ada", "ada")).rows().stream().map(Page.Row::key).toList());
            return null;
        }).join();
        awaitHeld(sessions, 1);
        assertEquals(1, db.read(txn -> byUser.verify(txn)).join(), "the sweeper deleted the expired rows' entries too");
    }

    /** An expired row's key in a unique index is free at once, before the sweeper deletes the row. */
    @Test
    void anExpiredRowFreesItsUniqueKey() throws Exception {
        db = Engines.open(dir);
        Table<String, String> holds = db.expiringTable("holds", Codec.STRING, Codec.STRING, null);
        Index<String, String, String> bySeat = db.uniqueIndex(holds, "holds.by-seat", Codec.STRING, (who, seat) -> seat);
        db.write(txn -> {
            holds.put(txn, "ada", "seat 1", GONE);
            return null;
        }).join();
        Thread.sleep(20);
        db.write(txn -> {
            holds.put(txn, "bob", "seat 1", HOUR);   // ada's hold expired: not a violation
            return null;
        }).join();
        assertEquals("bob", db.read(txn -> bySeat.key(txn, "seat 1")).join());
        awaitHeld(holds, 1);
        assertEquals(1, db.read(txn -> bySeat.verify(txn)).join());
    }

    @Test
    void expiryIsDeclaredWithTheTableAndKept() {
        db = Engines.open(dir);
        Table<String, String> plain = db.table("plain", Codec.STRING, Codec.STRING);
        CompletionException e = assertThrows(CompletionException.class, () -> db.write(txn -> {
            plain.put(txn, "k", "v", HOUR);
            return null;
        }).join());
        assertTrue(e.getCause().getMessage().contains("db.expiringTable"), e.getCause().getMessage());
        db.write(txn -> {
            plain.put(txn, "k", "v");
            return null;
        }).join();
        db.close();
        db = Engines.open(dir);
        IllegalStateException notEmpty = assertThrows(IllegalStateException.class,
            () -> db.expiringTable("plain", Codec.STRING, Codec.STRING, HOUR));
        assertTrue(notEmpty.getMessage().contains("must start empty"), notEmpty.getMessage());
        Table<String, String> sessions = db.expiringTable("sessions", Codec.STRING, Codec.STRING, HOUR);
        db.write(txn -> {
            sessions.put(txn, "s", "ada");
            return null;
        }).join();
        db.close();
        db = Engines.open(dir);
        IllegalStateException wrong = assertThrows(IllegalStateException.class, () -> db.table("sessions", Codec.STRING, Codec.STRING));
        assertTrue(wrong.getMessage().contains("db.expiringTable"), wrong.getMessage());
        Table<String, String> reopened = db.expiringTable("sessions", Codec.STRING, Codec.STRING, HOUR);
        assertEquals("ada", db.read(txn -> reopened.get(txn, "s")).join(), "rows keep their expiry across a reopen");
    }
}

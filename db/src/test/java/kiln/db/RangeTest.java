package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import java.util.function.Predicate;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Ranges with pages: bounds, prefixes, both directions, limits, and continuations that cannot be forged. */
class RangeTest {
    @TempDir Path dir;
    Db db;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    /** @return every key of {@code range}, page by page, each page a fresh read */
    private static <K> List<K> allPages(Db db, Table<K, ?> t, Range<K> range, List<Integer> pageSizes) {
        List<K> keys = new ArrayList<>();
        String after = null;
        do {
            Range<K> r = range.after(after);
            Page<K, ?> page = db.read(txn -> t.range(txn, r)).join();
            pageSizes.add(page.rows().size());
            for (Page.Row<K, ?> row : page.rows()) keys.add(row.key());
            after = page.continuation();
        } while (after != null);
        return keys;
    }

    /** Random bounds, directions and limits against a sorted reference: every page chain gives exactly the rows in range. */
    @Test
    void pagesOfEveryKindOfRangeGiveExactlyItsRowsInOrder() {
        db = Engines.open(dir);
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        TreeSet<Integer> present = new TreeSet<>();
        db.write(txn -> {
            for (int k = -100; k < 100; k += 2) t.put(txn, k, k * 10);
            return null;
        }).join();
        for (int k = -100; k < 100; k += 2) present.add(k);
        Random random = new Random(20261126);
        for (int i = 0; i < 400; i++) {
            int a = random.nextInt(240) - 120;
            int b = a + random.nextInt(80);
            Range<Integer> range;
            Predicate<Integer> in;
            switch (random.nextInt(7)) {
                case 0 -> { range = Range.all(); in = k -> true; }
                case 1 -> { range = Range.closed(a, b); in = k -> k >= a && k <= b; }
                case 2 -> { range = Range.closedOpen(a, b); in = k -> k >= a && k < b; }
                case 3 -> { range = Range.atLeast(a); in = k -> k >= a; }
                case 4 -> { range = Range.greaterThan(a); in = k -> k > a; }
                case 5 -> { range = Range.atMost(b); in = k -> k <= b; }
                default -> { range = Range.lessThan(b); in = k -> k < b; }
            }
            boolean reverse = random.nextBoolean();
            if (reverse) range = range.reverse();
            int limit = 1 + random.nextInt(30);
            range = range.limit(limit);
            List<Integer> expected = new ArrayList<>(reverse ? present.descendingSet() : present);
            expected.removeIf(in.negate());
            List<Integer> sizes = new ArrayList<>();
            assertEquals(expected, allPages(db, t, range, sizes), range.toString());
            for (int p = 0; p < sizes.size() - 1; p++) assertEquals(limit, sizes.get(p), "a page before the last is full: " + range);
            Range<Integer> counted = range;
            assertEquals(expected.size(), db.read(txn -> t.count(txn, counted)).join(), "count " + range);
        }
    }

    /** One room's messages, newest first, 20 a page: no other room's, even one whose name extends it. */
    @Test
    void aTuplePrefixPagesThroughOneRoomInBothDirections() {
        db = Engines.open(dir);
        Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
        db.write(txn -> {
            for (String room : List.of("lobby", "lobby\0x", "lobbyist", "lob")) {
                for (long at = 1; at <= 45; at++) messages.put(txn, Tuple.of(room, at), room + "/" + at);
            }
            return null;
        }).join();
        List<Integer> sizes = new ArrayList<>();
        List<Tuple> newest = allPages(db, messages, Range.prefix(Tuple.of("lobby")).reverse().limit(20), sizes);
        assertEquals(List.of(20, 20, 5), sizes);
        assertEquals(45, newest.size());
        assertEquals(Tuple.of("lobby", 45L), newest.get(0));
        assertEquals(Tuple.of("lobby", 1L), newest.get(44));
        assertTrue(newest.stream().allMatch(k -> k.getString(0).equals("lobby")), newest.toString());
        List<Tuple> oldest = allPages(db, messages, Range.prefix(Tuple.of("lobby")).limit(7), new ArrayList<>());
        List<Tuple> reversed = new ArrayList<>(newest);
        java.util.Collections.reverse(reversed);
        assertEquals(reversed, oldest);
    }

    @Test
    void rowsDeletedBetweenPagesDoNotBreakTheContinuation() {
        db = Engines.open(dir);
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        db.write(txn -> {
            for (int k = 0; k < 10; k++) t.put(txn, k, k);
            return null;
        }).join();
        Page<Integer, Integer> first = db.read(txn -> t.range(txn, Range.<Integer>all().limit(3))).join();
        assertEquals(List.of(0, 1, 2), first.rows().stream().map(Page.Row::key).toList());
        db.write(txn -> { t.delete(txn, 2); t.delete(txn, 3); return null; }).join();  // the last row shown, and the next
        Page<Integer, Integer> second = db.read(txn -> t.range(txn, Range.<Integer>all().limit(3).after(first.continuation()))).join();
        assertEquals(List.of(4, 5, 6), second.rows().stream().map(Page.Row::key).toList());
        assertTrue(second.hasMore());
        Page<Integer, Integer> empty = db.read(txn -> t.range(txn, Range.closed(100, 200))).join();
        assertEquals(List.of(), empty.rows());
        assertNull(empty.continuation());
    }

    @Test
    void aForgedStaleOrMisplacedContinuationIsRefusedNamingWhy() {
        db = Engines.open(dir);
        Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
        Table<Integer, Integer> other = db.table("other", Codec.INT, Codec.INT);
        db.write(txn -> {
            for (int k = 0; k < 10; k++) { t.put(txn, k, k); other.put(txn, k, k); }
            return null;
        }).join();
        Range<Integer> range = Range.<Integer>all().limit(2);
        String token = db.read(txn -> t.range(txn, range)).join().continuation();
        assertTrue(token.matches("[A-Za-z0-9_-]+"), "URL-safe: " + token);

        char flipped = token.charAt(5) == 'A' ? 'B' : 'A';
        String altered = token.substring(0, 5) + flipped + token.substring(6);
        assertTrue(refusal(t, range.after(altered)).contains("signature does not match"));
        assertTrue(refusal(t, range.after("not a token!")).contains("not URL-safe base64"));
        assertTrue(refusal(t, range.after("AAAA")).contains("wrong length or version"));
        assertTrue(refusal(other, range.after(token)).contains("made for another listing"));
        assertTrue(refusal(t, range.reverse().after(token)).contains("made for another listing"));

        // the secret outlives a restart: the token still works after a reopen; another database refuses it
        db.close();
        db = Engines.open(dir);
        Table<Integer, Integer> reopened = db.table("t", Codec.INT, Codec.INT);
        assertEquals(List.of(2, 3), db.read(txn -> reopened.range(txn, range.after(token))).join().rows().stream().map(Page.Row::key).toList());
        try (Db elsewhere = Engines.open(dir.resolve("elsewhere"))) {
            Table<Integer, Integer> same = elsewhere.table("t", Codec.INT, Codec.INT);
            Throwable e = assertThrows(java.util.concurrent.CompletionException.class,
                () -> elsewhere.read(txn -> same.range(txn, range.after(token))).join()).getCause();
            assertTrue(e instanceof DbException.BadContinuation && e.getMessage().contains("made by another database"), e.toString());
        }
    }

    /**
     * "Upcoming events": a listing whose lower bound is now, computed again at every request. The
     * token binds the listing (table, prefix, direction), not its bounds, so the next page goes on
     * after the last event shown, and an event that started meanwhile is left out by the new bound.
     */
    @Test
    void aContinuationResumesAListingWhoseBoundsMoveBetweenRequests() {
        db = Engines.open(dir);
        Table<Tuple, String> events = db.table("events", Codec.TUPLE, Codec.STRING);  // (city, startsAt, id)
        db.write(txn -> {
            for (long at = 10; at <= 100; at += 10) {
                events.put(txn, Tuple.of("paris", at, at / 10), "paris@" + at);
                events.put(txn, Tuple.of("lyon", at, at / 10), "lyon@" + at);
            }
            return null;
        }).join();
        java.util.function.BiFunction<Long, String, Page<Tuple, String>> upcoming = (now, after) -> db.read(txn ->
            events.range(txn, Range.closedOpen(Tuple.of("paris", now), Tuple.of("paris", Long.MAX_VALUE)).limit(3).after(after))).join();

        Page<Tuple, String> first = upcoming.apply(15L, null);                // at t=15: 20, 30, 40
        assertEquals(List.of("paris@20", "paris@30", "paris@40"), values(first));
        Page<Tuple, String> second = upcoming.apply(17L, first.continuation());  // now moved a little: resumes after 40
        assertEquals(List.of("paris@50", "paris@60", "paris@70"), values(second));
        Page<Tuple, String> third = upcoming.apply(85L, second.continuation());  // 80 started meanwhile: left out
        assertEquals(List.of("paris@90", "paris@100"), values(third));
        assertNull(third.continuation());
        Page<Tuple, String> later = upcoming.apply(65L, first.continuation());   // the new bound is past the token's key: from the bound
        assertEquals(List.of("paris@70", "paris@80", "paris@90"), values(later));

        // what the token is bound to still holds: another prefix, direction or table is refused
        String token = first.continuation();
        Throwable prefixed = assertThrows(java.util.concurrent.CompletionException.class, () -> db.read(txn ->
            events.range(txn, Range.prefix(Tuple.of("paris")).limit(3).after(token))).join()).getCause();
        assertTrue(prefixed instanceof DbException.BadContinuation && prefixed.getMessage().contains("another listing"), prefixed.toString());
        Throwable reversed = assertThrows(java.util.concurrent.CompletionException.class, () -> db.read(txn ->
            events.range(txn, Range.closedOpen(Tuple.of("paris", 0L), Tuple.of("paris", Long.MAX_VALUE)).reverse().after(token))).join()).getCause();
        assertTrue(reversed instanceof DbException.BadContinuation, reversed.toString());
        // the bounds still hold: a token shown for paris cannot list lyon's rows (a bound on lyon starts after paris's key: nothing)
        Page<Tuple, String> lyon = db.read(txn -> events.range(txn,
            Range.closedOpen(Tuple.of("lyon", 0L), Tuple.of("lyon", Long.MAX_VALUE)).limit(3).after(token))).join();
        assertTrue(values(lyon).stream().allMatch(v -> v.startsWith("lyon@")), values(lyon).toString());
    }

    private static List<String> values(Page<Tuple, String> page) {
        return page.rows().stream().map(Page.Row::value).toList();
    }

    private String refusal(Table<Integer, Integer> table, Range<Integer> range) {
        Throwable e = assertThrows(java.util.concurrent.CompletionException.class, () -> db.read(txn -> table.range(txn, range)).join()).getCause();
        assertTrue(e instanceof DbException.BadContinuation, e.toString());
        assertFalse(e.getMessage().contains("Exception"), e.getMessage());
        return e.getMessage();
    }
}

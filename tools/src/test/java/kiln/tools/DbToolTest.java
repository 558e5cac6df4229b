package kiln.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.ChangeFeed;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Index;
import kiln.db.KvEngine;
import kiln.db.KvEngines;
import kiln.db.KvTxn;
import kiln.db.Sequence;
import kiln.db.Table;
import kiln.db.Tuple;

/**
 * {@code kiln db} on a small database of every kind of space (the test-only in-memory engine):
 * what stat, get and range print, pages, dump and load entry for entry, the refusals, a damaged
 * dump, verify, and the exit statuses.
 */
class DbToolTest {
    @TempDir Path dir;
    private String url;

    /** A message of the small database: JSON values. */
    public record Message(String room, String author, String text) {
    }

    @BeforeEach
    void fill() {
        url = "memory:" + dir.resolve("db");
        try (Db db = Db.open(url)) {
            Table<Integer, String> notes = db.table("notes", Codec.INT, Codec.STRING);
            Table<Tuple, Message> messages = db.table("messages", Codec.TUPLE, Codec.json(Message.class));
            Index<String, Tuple, Message> byAuthor = db.index(messages, "messages.by-author", Codec.STRING, (k, m) -> m.author());
            Table<String, Long> sessions = db.expiringTable("sessions", Codec.STRING, Codec.LONG, Duration.ofHours(1));
            ChangeFeed<Tuple, Message> feed = db.changeFeed(messages, 100);
            Sequence ids = db.sequence("messages");
            byAuthor.ready().join();
            for (int i = 1; i <= 5; i++) {
                int n = i;
                db.write(txn -> {
                    notes.put(txn, n, "note " + n);
                    long id = ids.next(txn);
                    messages.put(txn, Tuple.of(n % 2 == 0 ? "kitchen" : "lobby", id), new Message("lobby", n % 2 == 0 ? "bob" : "ada", "hello " + n));
                    return null;
                }).join();
            }
            db.write(txn -> {
                sessions.put(txn, "token-1", 1L);
                return null;
            }).join();
            assertEquals(5, feed.lastSeq());
        }
    }

    @Test
    void statNamesEachSpaceAndWhatKilnsMarksSay() {
        Run r = Run.of("stat", url);
        assertEquals(0, r.status(), r.toString());
        assertLine(r.out(), "notes", "table", "5");
        assertLine(r.out(), "messages ", "table", "fed (kiln.changes.messages)");
        assertLine(r.out(), "messages.by-author", "index", "built");
        assertLine(r.out(), "kiln.changes.messages", "feed log", "last sequence 5 (kept 1..5)");
        assertLine(r.out(), "sessions ", "expiring table", "rows expire");
        assertLine(r.out(), "kiln.expiry.sessions", "expiry schedule", "next 20");
        assertLine(r.out(), "kiln.sequences", "sequences", "\"messages\" = 5");
        assertLine(r.out(), "kiln.meta", "settings", "continuation secret; 1 index state; 1 expiring table");
    }

    private static void assertLine(String out, String... parts) {
        for (String line : out.split("\n")) {
            if (!line.startsWith(parts[0])) continue;
            for (String p : parts) assertTrue(line.contains(p), "'" + p + "' in: " + line);
            return;
        }
        throw new AssertionError("no line for " + parts[0] + " in:\n" + out);
    }

    @Test
    void rangePrintsKeysAsTypedAndPagesWithAfter() {
        Run first = Run.of("range", url, "notes", "--limit", "2");
        assertEquals(0, first.status(), first.toString());
        assertEquals("int:1\t\"note 1\"\nint:2\t\"note 2\"\n", first.out());
        assertTrue(first.err().contains("more after: --after 'int:2'"), first.err());
        Run next = Run.of("range", url, "notes", "--limit", "2", "--after", "int:2");
        assertEquals("int:3\t\"note 3\"\nint:4\t\"note 4\"\n", next.out());
        Run back = Run.of("range", url, "notes", "--reverse", "--limit", "0");
        assertEquals(5, back.out().lines().count());
        assertTrue(back.out().startsWith("int:5"), back.out());
        assertEquals("", back.err());

        Run lobby = Run.of("range", url, "messages", "--prefix", "(\"lobby\")");
        assertEquals(3, lobby.out().lines().count(), lobby.toString());
        assertTrue(lobby.out().startsWith("(\"lobby\", 1)\t{\"room\":\"lobby\",\"author\":\"ada\",\"text\":\"hello 1\"}"), lobby.out());

        Run bob = Run.of("range", url, "messages.by-author", "--prefix", "\"bob\"");
        assertEquals("\"bob\"\trow (\"kitchen\", 2)\n\"bob\"\trow (\"kitchen\", 4)\n", bob.out(), bob.toString());

        Run feed = Run.of("range", url, "kiln.changes.messages", "--limit", "1");
        assertTrue(feed.out().startsWith("long:1\t{\"committedAt\":\"20"), feed.out());
        assertTrue(feed.out().contains("\"changes\":[{\"key\":\"(\\\"lobby\\\", 1)\",\"value\":{\"room\":\"lobby\""), feed.out());

        Run sessions = Run.of("range", url, "sessions");
        assertTrue(sessions.out().matches("\"token-1\"\tlong:1\texpires 20\\S+Z\n"), sessions.out());
        Run meta = Run.of("range", url, "kiln.meta");
        assertTrue(meta.out().contains("\"continuation-secret\"\t(32 bytes, not shown: it signs continuations)"), meta.out());
        assertTrue(meta.out().contains("\"index:messages.by-author\"\tbuilt"), meta.out());
    }

    @Test
    void getFindsOneEntryOrSaysItIsNotThere() {
        Run note = Run.of("get", url, "notes", "int:3");
        assertEquals(new Run(0, "int:3\t\"note 3\"\n", ""), note);
        Run ada = Run.of("get", url, "messages.by-author", "\"ada\"");
        assertEquals(3, ada.out().lines().count(), ada.toString());
        Run none = Run.of("get", url, "notes", "int:9");
        assertEquals(1, none.status());
        assertEquals("kiln db: int:9: not found in notes\n", none.err());
    }

    @Test
    void dumpThenLoadGivesEveryEntryBack() throws Exception {
        Path file = dir.resolve("db.dump");
        Run dump = Run.of("dump", url, "-o", file.toString());
        assertEquals(0, dump.status(), dump.toString());
        assertTrue(dump.err().startsWith("dumped 8 spaces, "), dump.err());
        List<String> lines = Files.readAllLines(file);
        assertTrue(lines.get(0).startsWith("{\"dump\":\"kiln\",\"version\":1,\"source\":\"memory:"), lines.get(0));
        assertTrue(lines.get(lines.size() - 1).startsWith("{\"finish\":true,\"spaces\":8,"), lines.get(lines.size() - 1));

        String copy = "memory:" + dir.resolve("copy");
        Run load = Run.of("load", copy, "-i", file.toString());
        assertEquals(0, load.status(), load.toString());
        assertTrue(load.out().startsWith("loaded 8 spaces, "), load.out());
        assertTrue(load.out().contains("read back and checked"), load.out());
        assertTrue(load.out().contains("  notes  "), load.out());
        assertEquals("", load.err(), "a load this short tells no progress");
        assertEquals(Contents.of(url), Contents.of(copy));

        Run again = Run.of("load", copy, "-i", file.toString());
        assertEquals(1, again.status());
        assertTrue(again.err().contains("holds data already (kiln.changes.messages: 5 entries,"), again.err());
        assertTrue(again.err().contains("--replace"), again.err());
        Run replaced = Run.of("load", copy, "-i", file.toString(), "--replace", "-q");
        assertEquals(0, replaced.status(), replaced.toString());
        assertTrue(replaced.out().contains("emptied first (--replace): "), replaced.out());
        assertEquals("", replaced.err());
        assertEquals(Contents.of(url), Contents.of(copy));
    }

    @Test
    void aDumpAlteredOrCutShortIsRefusedNamingTheLine() throws Exception {
        Path file = dir.resolve("db.dump");
        assertEquals(0, Run.of("dump", url, "-o", file.toString()).status());
        List<String> lines = Files.readAllLines(file);
        int entry = 0;
        while (!lines.get(entry).startsWith("{\"k\"")) entry++;
        List<String> altered = new java.util.ArrayList<>(lines);
        altered.set(entry, lines.get(entry).replaceFirst("\"v\":\"[^\"]*\"", "\"v\":\"AAAA\""));
        Path bad = Files.write(dir.resolve("altered.dump"), altered);
        Run r = Run.of("load", "memory:" + dir.resolve("t1"), "-i", bad.toString());
        assertEquals(1, r.status());
        assertTrue(r.err().contains("altered.dump, line ") && r.err().contains("does not match its end line"), r.err());

        Path cut = Files.write(dir.resolve("cut.dump"), lines.subList(0, lines.size() - 3));
        Run c = Run.of("load", "memory:" + dir.resolve("t2"), "-i", cut.toString());
        assertEquals(1, c.status());
        assertTrue(c.err().contains("cut short"), c.err());
        assertTrue(c.err().contains("holds what was loaded before"), c.err());

        Path other = Files.writeString(dir.resolve("other.txt"), "hello\n");
        Run o = Run.of("load", "memory:" + dir.resolve("t3"), "-i", other.toString());
        assertTrue(o.err().contains("line 1: the dump line is not JSON"), o.err());
    }

    @Test
    void verifyFindsNoProblemInAGoodDatabaseAndNamesOneInABadOne() {
        Run good = Run.of("verify", url);
        assertEquals(0, good.status(), good.toString());
        assertTrue(good.out().contains("8 spaces, "), good.out());
        assertTrue(good.out().endsWith("no problem found\n"), good.out());
        assertTrue(good.out().contains("kiln.changes.messages  ok       5 entries in order; change sets 1..5 in sequence"), good.out());

        try (KvEngine raw = KvEngines.open(url); KvTxn w = raw.beginWrite()) {  // a row deleted behind its schedule's back
            w.delete(raw.space(w, "sessions", false), ByteBuffer.allocateDirect(7).put("token-1".getBytes(StandardCharsets.UTF_8)).flip());
            w.commit();
        }
        Run bad = Run.of("verify", url);
        assertEquals(1, bad.status());
        assertTrue(bad.out().contains("kiln.expiry.sessions   PROBLEM  1 entry in order; 1 expiry checked against sessions"), bad.out());
        assertTrue(bad.out().contains("row \"token-1\" is scheduled at "), bad.out());
        assertTrue(bad.out().endsWith("1 problem\n"), bad.out());
    }

    @Test
    void anLmdbTargetWithTooFewTablesForTheDumpSaysWhichSetting() throws Exception {
        String many = "memory:" + dir.resolve("many");
        try (KvEngine e = KvEngines.open(many); KvTxn w = e.beginWrite()) {
            for (int i = 0; i < 40; i++) e.space(w, "t" + i, true);
            w.commit();
        }
        Run small = Run.of("copy", many, "lmdb:" + dir.resolve("small"), "-q");
        assertEquals(1, small.status());
        assertTrue(small.err().contains("the dump's 40 spaces: give lmdb:DIR?maxTables=N with N at least 40"), small.err());
        Run big = Run.of("copy", many, "lmdb:" + dir.resolve("big") + "?maxTables=64", "-q");
        assertEquals(0, big.status(), big.toString());
        assertTrue(big.out().startsWith("copied 40 spaces, 0 entries"), big.out());
    }

    @Test
    void wrongUrlsSpacesAndCommandLinesSaySo() {
        Run engine = Run.of("stat", "mongodb://x/y");
        assertEquals(1, engine.status());
        assertTrue(engine.err().startsWith("kiln db: no database engine on the class path opens 'mongodb://x/y'; engines found: "), engine.err());
        assertTrue(engine.err().contains("lmdb (") && engine.err().contains("postgresql ("), engine.err());
        Run space = Run.of("range", url, "nope");
        assertEquals(1, space.status());
        assertTrue(space.err().startsWith("kiln db: no space 'nope' in memory:"), space.err());
        assertTrue(space.err().contains("; there are: kiln.changes.messages, "), space.err());
        Run usage = Run.of("range", url);
        assertEquals(2, usage.status());
        assertTrue(usage.err().contains("Missing required parameter: 'SPACE'"), usage.err());
        Run none = Run.of();
        assertEquals(2, none.status());
        assertTrue(none.err().contains("a command is missing"), none.err());
        Run key = Run.of("get", url, "notes", "3");
        assertEquals(1, key.status());
        assertTrue(key.err().contains("'3' is not a key"), key.err());
        Map<String, List<String>> before = Contents.of(url);
        assertEquals(1, Run.of("load", url, "-i", dir.resolve("missing.dump").toString()).status());
        assertEquals(before, Contents.of(url));
        assertFalse(Files.exists(dir.resolve("missing.dump")));
    }
}

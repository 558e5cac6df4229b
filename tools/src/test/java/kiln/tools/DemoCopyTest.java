package kiln.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Db;
import kiln.db.postgresql.PostgresServer;

/**
 * issue 40's "done when": the demo's database, made by the demo's own code on LMDB, copied
 * LMDB → PostgreSQL → LMDB with {@code kiln db copy}: every space equal entry by entry in all three
 * (rows, index entries, feed sets, sequences, expiries, settings), {@code kiln db verify} clean on
 * each, and the app, opened on the copy, answers as on the original (its continuation tokens too:
 * the secret that signs them moved with the data), keeps its unique index, and goes on numbering
 * its feeds and sequences from where the original stopped.
 */
class DemoCopyTest {
    @RegisterExtension static final PostgresServer POSTGRES = new PostgresServer();
    @TempDir Path dir;

    @Test
    void theDemoDatabaseGoesFromLmdbToPostgresqlAndBackEntryForEntry() {
        String lmdb = "lmdb:" + dir.resolve("one-box");
        Map<String, String> answers;
        try (Db db = Db.open(lmdb)) {
            DemoDatabase demo = new DemoDatabase(db);
            demo.fill();
            answers = demo.answers();
        }
        String postgres = POSTGRES.url("kiln");
        String back = "lmdb:" + dir.resolve("back");

        Run there = Run.of("copy", lmdb, postgres);
        assertEquals(0, there.status(), there.toString());
        assertTrue(there.out().startsWith("copied 14 spaces, "), there.out());
        Run again = Run.of("copy", postgres, back);
        assertEquals(0, again.status(), again.toString());

        Map<String, List<String>> original = Contents.of(lmdb);
        assertEquals(original, Contents.of(postgres), "LMDB → PostgreSQL");
        assertEquals(original, Contents.of(back), "LMDB → PostgreSQL → LMDB");
        // what was compared: the demo's rows and feed, the board's rows, indexes, feed, sequences and expiries
        assertEquals(10_000, original.get("world").size());
        assertEquals(12, original.get("fortune").size());
        assertEquals(3, original.get("kiln.changes.world").size(), "a set per /updates");
        assertEquals(3, original.get("board.users").size());
        assertEquals(3, original.get("board.users.by-email").size(), "the unique index's entries");
        assertEquals(5, original.get("board.messages").size(), "the retried post posted nothing");
        assertEquals(5, original.get("board.messages.by-author").size(), "the index's entries");
        assertEquals(5, original.get("kiln.changes.board.messages").size(), "a set per post");
        assertEquals(2, original.get("kiln.sequences").size(), "board.users and board.messages");
        assertEquals(2, original.get("board.sessions").size());
        assertEquals(2, original.get("kiln.expiry.board.sessions").size());
        assertEquals(1, original.get("board.post-keys").size(), "the idempotency key");
        for (String url : List.of(lmdb, postgres, back)) {
            Run v = Run.of("verify", url);
            assertEquals(0, v.status(), v.toString());
        }

        try (Db db = Db.open(back)) {  // the app on the copy: same answers, and it goes on from where the original stopped
            DemoDatabase copy = new DemoDatabase(db);
            assertEquals(answers, copy.answers());
            assertTrue(db.verify().containsKey("board.messages.by-author"));
            copy.more();
        }
        Run stat = Run.of("stat", back);
        assertTrue(stat.out().contains("feed of world: last sequence 4 (kept 1..4)"), stat.out());
        assertTrue(stat.out().contains("feed of board.messages: last sequence 6 (kept 1..6)"), stat.out());
        assertTrue(stat.out().contains("\"board.messages\" = 6, \"board.users\" = 4"), stat.out());
    }
}

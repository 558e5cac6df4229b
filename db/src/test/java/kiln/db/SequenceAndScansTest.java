package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The conveniences every app needs: durable ids, last key, reverse and prefix scans, JSON values. */
class SequenceAndScansTest {
    @TempDir Path dir;

    /** A value class as a user writes one: public fields, a no-argument constructor. */
    public static final class Todo {
        public String title;
        public boolean done;

        public Todo() {
        }

        Todo(String title, boolean done) {
            this.title = title;
            this.done = done;
        }
    }

    @Test
    void aSequenceCountsDurablyAndAFailedWriteTakesTheSameIdAgain() {
        try (Db db = Engines.open(dir)) {
            Sequence ids = db.sequence("todos");
            assertEquals(1L, db.write(ids::next).join());
            assertEquals(2L, db.write(ids::next).join());
            CompletionException failed = assertThrows(CompletionException.class, () -> db.write(txn -> {
                ids.next(txn);
                throw new IllegalStateException("rolled back");
            }).join());
            assertEquals("rolled back", failed.getCause().getMessage());
            assertEquals(3L, db.write(ids::next).join(), "the rolled-back write's id is taken again");
            Sequence other = db.sequence("other");
            assertEquals(1L, db.write(other::next).join(), "each sequence counts on its own");
        }
        try (Db db = Engines.open(dir)) {
            Sequence ids = db.sequence("todos");
            assertEquals(3L, db.read(ids::current).join(), "survives a reopen");
            assertEquals(4L, db.write(ids::next).join());
        }
    }

    @Test
    void lastKeyReverseAndPrefixScans() {
        try (Db db = Engines.open(dir)) {
            Table<Long, String> log = db.table("log", Codec.LONG, Codec.STRING);
            Table<String, Integer> users = db.table("users", Codec.STRING, Codec.INT);
            assertNull(db.read(log::lastKey).join());
            db.write(txn -> {
                for (long i = 1; i <= 5; i++) log.put(txn, i * 10, "e" + i);
                for (String u : List.of("user:ann", "user:bob", "userz", "admin:eve", "user:")) users.put(txn, u, u.length());
                return null;
            }).join();
            assertEquals(50L, db.read(log::lastKey).join());
            assertEquals(10L, db.read(log::firstKey).join());

            List<Long> newestFirst = new ArrayList<>();
            db.read(txn -> log.scanBackward(txn, null, (k, v) -> newestFirst.add(k))).join();
            assertEquals(List.of(50L, 40L, 30L, 20L, 10L), newestFirst);
            List<Long> fromBetween = new ArrayList<>();
            db.read(txn -> log.scanBackward(txn, 35L, (k, v) -> fromBetween.add(k))).join();
            assertEquals(List.of(30L, 20L, 10L), fromBetween, "starts at the last key <= 35");
            List<Long> fromExact = new ArrayList<>();
            db.read(txn -> log.scanBackward(txn, 40L, (k, v) -> fromExact.size() < 2 && fromExact.add(k))).join();
            assertEquals(List.of(40L, 30L), fromExact, "starts at 40 itself; the visitor stops it");
            List<Long> pastTheEnd = new ArrayList<>();
            db.read(txn -> log.scanBackward(txn, 99L, (k, v) -> pastTheEnd.add(k))).join();
            assertEquals(50L, pastTheEnd.get(0));

            List<String> prefixed = new ArrayList<>();
            db.read(txn -> users.scanPrefix(txn, "user:", (k, v) -> {
                users.get(txn, "admin:eve");  // reuses the shared key buffer mid-scan
                return prefixed.add(k);
            })).join();
            assertEquals(List.of("user:", "user:ann", "user:bob"), prefixed);
        }
    }

    @Test
    void jsonValuesRoundTripAndBadOnesFailClearly() {
        try (Db db = Engines.open(dir)) {
            Table<Long, Todo> todos = db.table("todos", Codec.LONG, Codec.json(Todo.class));
            Table<Long, String> raw = db.table("todos", Codec.LONG, Codec.STRING);
            db.write(txn -> {
                todos.put(txn, 1L, new Todo("milk \u00e9", false));
                todos.put(txn, 2L, new Todo("bread", true));
                raw.put(txn, 3L, "not json");
                raw.put(txn, 4L, "{\"title\":\"old\",\"done\":true,\"priority\":3}");
                return null;
            }).join();
            Todo milk = db.read(txn -> todos.get(txn, 1L)).join();
            assertEquals("milk \u00e9", milk.title);
            assertTrue(db.read(txn -> todos.get(txn, 2L)).join().done);
            assertEquals("old", db.read(txn -> todos.get(txn, 4L)).join().title, "a property the class lost is skipped");
            CompletionException bad = assertThrows(CompletionException.class, () -> db.read(txn -> todos.get(txn, 3L)).join());
            assertTrue(bad.getCause() instanceof DbException && bad.getCause().getMessage().contains("not JSON for"), bad.getCause()::toString);
        }
    }
}

package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Secondary and unique indexes: kept in the write, read by key and by range, built online, verified. */
class IndexTest {
    @TempDir Path dir;
    Db db;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    /** A message: room, author, text; its key is Tuple.of(room, id). */
    record Message(String room, String author, String text) {
    }

    static final Codec<Message> MESSAGE = Codec.json(Message.class);

    /** @return what {@code query} failed with, looked through join()'s CompletionException */
    private static <T extends Throwable> T fails(Class<T> type, org.junit.jupiter.api.function.Executable query) {
        CompletionException e = assertThrows(CompletionException.class, query);
        assertTrue(type.isInstance(e.getCause()), "expected " + type.getSimpleName() + ", got " + e.getCause());
        return type.cast(e.getCause());
    }

    private static Thread start(Runnable r) {
        Thread t = new Thread(r);
        t.start();
        return t;
    }

    private static <K, V> List<K> keys(Page<K, V> page) {
        List<K> out = new ArrayList<>();
        for (Page.Row<K, V> r : page.rows()) out.add(r.key());
        return out;
    }

    @Test
    void anIndexFollowsEveryPutAndDeleteAndReadsBackTheRows() {
        db = Engines.open(dir);
        Table<Tuple, Message> messages = db.table("messages", Codec.TUPLE, MESSAGE);
        Index<String, Tuple, Message> byAuthor = db.index(messages, "messages.by-author", Codec.STRING, (k, m) -> m.author());
        assertTrue(byAuthor.isReady(), "an index of an empty table is ready at once");
        db.write(txn -> {
            messages.put(txn, Tuple.of("lobby", 1L), new Message("lobby", "ada", "hi"));
            messages.put(txn, Tuple.of("lobby", 2L), new Message("lobby", "bob", "hello"));
            messages.put(txn, Tuple.of("attic", 3L), new Message("attic", "ada", "up here"));
            messages.put(txn, Tuple.of("lobby", 4L), new Message("lobby", "adam", "a prefix of no one"));
            return null;
        }).join();
        Page<Tuple, Message> ada = db.read(txn -> byAuthor.range(txn, Range.closed("ada", "ada"))).join();
        assertEquals(List.of(Tuple.of("attic", 3L), Tuple.of("lobby", 1L)), keys(ada), "ada's rows, in row-key order; not adam's");
        assertEquals("up here", ada.rows().get(0).value().text());
        assertEquals(new Message("lobby", "bob", "hello"), db.read(txn -> byAuthor.get(txn, "bob")).join());
        assertNull(db.read(txn -> byAuthor.get(txn, "eve")).join());
        assertEquals(2, db.read(txn -> byAuthor.count(txn, Range.closed("ada", "ada"))).join());
        assertEquals(3, db.read(txn -> byAuthor.count(txn, Range.prefix("ada"))).join(), "STRING prefix 'ada': ada twice, adam");

        // moving a row to another author moves its entry; deleting it removes the entry
        db.write(txn -> {
            messages.put(txn, Tuple.of("lobby", 1L), new Message("lobby", "bob", "hi, as bob"));
            messages.delete(txn, Tuple.of("attic", 3L));
            return null;
        }).join();
        assertEquals(0, db.read(txn -> byAuthor.count(txn, Range.closed("ada", "ada"))).join());
        assertEquals(List.of(Tuple.of("lobby", 2L), Tuple.of("lobby", 1L)),
            keys(db.read(txn -> byAuthor.range(txn, Range.closed("bob", "bob").reverse())).join()), "reversed");
        assertEquals(3, db.read(txn -> byAuthor.verify(txn)).join());
        assertTrue(db.verify().containsKey("messages.by-author"));
    }

    @Test
    void indexPagesFollowEachOtherAndRefuseAForeignContinuation() {
        db = Engines.open(dir);
        Table<Long, Message> messages = db.table("messages", Codec.LONG, MESSAGE);
        Index<Tuple, Long, Message> byRoomAuthor = db.index(messages, "by-room-author", Codec.TUPLE, (id, m) -> Tuple.of(m.room(), m.author()));
        Random random = new Random(7);
        TreeMap<Tuple, Long> expected = new TreeMap<>();
        db.write(txn -> {
            for (long id = 1; id <= 300; id++) {
                Message m = new Message("room" + random.nextInt(3), "user" + random.nextInt(10), "m" + id);
                messages.put(txn, id, m);
            }
            return null;
        }).join();
        db.read(txn -> messages.scan(txn, (id, m) -> {
            expected.put(Tuple.of(m.room(), m.author(), id), id);
            return true;
        })).join();
        for (boolean reverse : new boolean[] {false, true}) {
            Range<Tuple> room1 = Range.prefix(Tuple.of("room1")).limit(7);
            if (reverse) room1 = room1.reverse();
            List<Long> got = new ArrayList<>();
            String after = null;
            do {
                Range<Tuple> r = room1.after(after);
                Page<Long, Message> page = db.read(txn -> byRoomAuthor.range(txn, r)).join();
                assertTrue(page.rows().size() <= 7);
                got.addAll(keys(page));
                after = page.continuation();
            } while (after != null);
            List<Long> want = new ArrayList<>(expected.subMap(Tuple.of("room1"), true, Tuple.of("room1\0"), false).values());
            if (reverse) java.util.Collections.reverse(want);
            assertEquals(want, got, "room1's rows by author, then id" + (reverse ? ", reversed" : ""));
        }
        String token = db.read(txn -> byRoomAuthor.range(txn, Range.<Tuple>all().limit(1))).join().continuation();
        Table<Long, Message> other = messages;
        DbException.BadContinuation e = fails(DbException.BadContinuation.class,
            () -> db.read(txn -> other.range(txn, Range.<Long>all().after(token))).join());
        assertTrue(e.getMessage().length() > 0);
    }

    @Test
    void oneRowMayGiveSeveralKeysOrNone() {
        db = Engines.open(dir);
        Table<Long, String> posts = db.table("posts", Codec.LONG, Codec.STRING);
        // tags are the words that start with '#'
        Index<String, Long, String> byTag = db.indexMany(posts, "posts.by-tag", Codec.STRING,
            (id, text) -> java.util.Arrays.stream(text.split(" ")).filter(w -> w.startsWith("#")).toList());
        db.write(txn -> {
            posts.put(txn, 1L, "#java #db and #java again");
            posts.put(txn, 2L, "no tags");
            posts.put(txn, 3L, "#db only");
            return null;
        }).join();
        assertEquals(List.of(1L), keys(db.read(txn -> byTag.range(txn, Range.closed("#java", "#java"))).join()), "a key given twice is one entry");
        assertEquals(List.of(1L, 3L), keys(db.read(txn -> byTag.range(txn, Range.closed("#db", "#db"))).join()));
        assertEquals(3, db.read(txn -> byTag.verify(txn)).join());
        db.write(txn -> {
            posts.put(txn, 1L, "#db now");
            return null;
        }).join();
        assertEquals(0, db.read(txn -> byTag.count(txn, Range.closed("#java", "#java"))).join());
        assertEquals(2, db.read(txn -> byTag.verify(txn)).join());
    }

    record User(String name, String email) {
    }

    @Test
    void aUniqueIndexRefusesATakenKeyAndChangesNothing() {
        db = Engines.open(dir);
        Table<Long, User> users = db.table("users", Codec.LONG, Codec.json(User.class));
        Index<String, Long, User> byEmail = db.uniqueIndex(users, "users.by-email", Codec.STRING, (id, u) -> u.email());
        Index<String, Long, User> byName = db.index(users, "users.by-name", Codec.STRING, (id, u) -> u.name());
        db.write(txn -> {
            users.put(txn, 1L, new User("ada", "ada@example.org"));
            users.put(txn, 2L, new User("bob", "bob@example.org"));
            return null;
        }).join();
        CompletionException e = assertThrows(CompletionException.class, () -> db.write(txn -> {
            users.put(txn, 3L, new User("eve", "ada@example.org"));
            return null;
        }).join());
        DbException.UniqueViolation v = (DbException.UniqueViolation) e.getCause();
        assertEquals("users.by-email", v.index);
        assertTrue(v.getMessage().contains("'ada@example.org' is taken") && v.getMessage().contains("row 1"), v.getMessage());
        // caught inside the query: the refused put changed neither the row nor any index
        boolean refused = db.write(txn -> {
            try {
                users.put(txn, 2L, new User("bobby", "ada@example.org"));
                return false;
            } catch (DbException.UniqueViolation taken) {
                return true;
            }
        }).join();
        assertTrue(refused);
        assertEquals(new User("bob", "bob@example.org"), db.read(txn -> users.get(txn, 2L)).join());
        assertEquals(2L, db.read(txn -> byName.key(txn, "bob")).join(), "the other index kept bob");
        assertNull(db.read(txn -> byName.key(txn, "bobby")).join());
        // a row keeps its own key; a changed key frees the old one
        db.write(txn -> {
            users.put(txn, 1L, new User("ada lovelace", "ada@example.org"));
            users.put(txn, 2L, new User("bob", "robert@example.org"));
            users.put(txn, 3L, new User("bob 2", "bob@example.org"));
            return null;
        }).join();
        assertEquals(3L, db.read(txn -> byEmail.key(txn, "bob@example.org")).join());
        assertEquals(3, db.read(txn -> byEmail.verify(txn)).join());
        assertEquals(3, db.read(txn -> byName.verify(txn)).join());
    }

    /** Eight writers race for 50 e-mail addresses: each goes to exactly one row, and the losers get UniqueViolation. */
    @Test
    void concurrentWritersGetEachUniqueKeyOnce() throws Exception {
        db = Engines.open(dir);
        Table<Long, User> users = db.table("users", Codec.LONG, Codec.json(User.class));
        Index<String, Long, User> byEmail = db.uniqueIndex(users, "users.by-email", Codec.STRING, (id, u) -> u.email());
        AtomicInteger won = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        Map<String, Long> winners = new ConcurrentHashMap<>();
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < 8; w++) {
            int writer = w;
            threads.add(start(() -> {
                List<QueryFuture<Void>> mine = new ArrayList<>();
                for (int e = 0; e < 50; e++) {
                    long id = writer * 1000L + e;
                    String email = "user" + e + "@example.org";
                    QueryFuture<Void> f = db.write(txn -> {
                        users.put(txn, id, new User("w" + writer, email));
                        return null;
                    });
                    mine.add(f);
                    f.whenComplete((ok, failed) -> {
                        if (failed == null) {
                            won.incrementAndGet();
                            assertNull(winners.put(email, id), "two rows won " + email);
                        } else if (failed instanceof DbException.UniqueViolation) {
                            refused.incrementAndGet();
                        }
                    });
                }
                for (QueryFuture<Void> f : mine) {
                    try {
                        f.join();
                    } catch (CompletionException ignored) {
                        // counted above
                    }
                }
            }));
        }
        for (Thread t : threads) t.join(TimeUnit.SECONDS.toMillis(60));
        assertEquals(50, won.get(), "one winner per address");
        assertEquals(350, refused.get(), "every other attempt refused");
        assertEquals(50, db.read(txn -> users.count(txn)).join());
        assertEquals(50, db.read(txn -> byEmail.verify(txn)).join());
        for (Map.Entry<String, Long> w : winners.entrySet()) {
            assertEquals(w.getValue(), db.read(txn -> byEmail.key(txn, w.getKey())).join());
        }
    }

    /**
     * 100,000 rows, then an index declared while four writers update, insert and delete rows: reads
     * before it is built are refused, it becomes ready, and it agrees with the table.
     */
    @Test
    void anIndexAddedToATableOf100000RowsIsBuiltOnlineWhileItIsWritten() throws Exception {
        // writes of 10,000 rows and reads of every row: over PostgreSQL on a busy machine they may take
        // longer than the default deadline, which this test is not about
        db = Engines.builder(dir).deadline(java.time.Duration.ofMinutes(2)).open();
        Table<Long, Message> messages = db.table("messages", Codec.LONG, MESSAGE);
        for (int batch = 0; batch < 10; batch++) {
            long from = batch * 10_000L;
            db.write(txn -> {
                for (long id = from; id < from + 10_000; id++) messages.put(txn, id, new Message("r" + id % 100, "u" + id % 1000, "t"));
                return null;
            }).join();
        }
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        AtomicInteger writes = new AtomicInteger();
        List<Thread> writers = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            Random random = new Random(w);
            writers.add(start(() -> {
                while (!stop.get() && writes.get() < 200_000) {
                    long id = random.nextInt(120_000);
                    int op = random.nextInt(3);
                    db.write(txn -> {
                        if (op == 0) messages.delete(txn, id);
                        else messages.put(txn, id, new Message("r" + random.nextInt(100), "v" + random.nextInt(1000), "edited"));
                        return null;
                    }).join();
                    writes.incrementAndGet();
                }
            }));
        }
        Thread.sleep(50);
        Index<String, Long, Message> byAuthor = db.index(messages, "messages.by-author", Codec.STRING, (id, m) -> m.author());
        int before = writes.get();
        if (!byAuthor.isReady()) {
            DbException.IndexNotReady e = fails(DbException.IndexNotReady.class, () -> db.read(txn -> byAuthor.get(txn, "u1")).join());
            assertTrue(e.getMessage().contains("is being built"), e.getMessage());
        }
        byAuthor.ready().get(120, TimeUnit.SECONDS);
        int during = writes.get() - before;
        stop.set(true);
        for (Thread t : writers) t.join();
        long rows = db.read(txn -> messages.count(txn)).join();
        assertEquals(rows, db.read(txn -> byAuthor.verify(txn)).join(), "every row has its entry, and no entry is stray");
        assertTrue(during > 0, "writes went on while the index was built: " + during);
        db.verify();
    }

    @Test
    void aBuildStoppedByACloseGoesOnAfterTheReopen() {
        db = Engines.open(dir);
        Table<Long, String> names = db.table("names", Codec.LONG, Codec.STRING);
        db.write(txn -> {
            for (long id = 0; id < 20_000; id++) names.put(txn, id, "n" + id % 97);
            return null;
        }).join();
        Index<String, Long, String> byName = db.index(names, "names.by-name", Codec.STRING, (id, n) -> n);
        db.close();  // drains the writer: the build step after the last one queued is refused
        boolean builtBefore = byName.isReady();
        db = Engines.open(dir);
        Table<Long, String> reopened = db.table("names", Codec.LONG, Codec.STRING);
        Index<String, Long, String> again = db.index(reopened, "names.by-name", Codec.STRING, (id, n) -> n);
        again.ready().join();
        assertEquals(20_000, db.read(txn -> again.verify(txn)).join(), "built " + (builtBefore ? "before the close" : "after the reopen"));
    }

    @Test
    void aUniqueIndexOverRowsThatBreakItFailsToBuildAndSaysWhy() {
        db = Engines.open(dir);
        Table<Long, User> users = db.table("users", Codec.LONG, Codec.json(User.class));
        db.write(txn -> {
            users.put(txn, 1L, new User("ada", "same@example.org"));
            users.put(txn, 2L, new User("bob", "same@example.org"));
            return null;
        }).join();
        Index<String, Long, User> byEmail = db.uniqueIndex(users, "users.by-email", Codec.STRING, (id, u) -> u.email());
        CompletionException e = assertThrows(CompletionException.class, () -> byEmail.ready().join());
        assertTrue(e.getCause() instanceof DbException.UniqueViolation, String.valueOf(e.getCause()));
        DbException.IndexNotReady notReady = fails(DbException.IndexNotReady.class,
            () -> db.read(txn -> byEmail.key(txn, "same@example.org")).join());
        assertTrue(notReady.getMessage().contains("could not be built") && notReady.getMessage().contains("is taken"), notReady.getMessage());
        assertFalse(byEmail.isReady());
    }

    /** An extractor changed under an existing index's name: verify finds the rows whose entries are missing. */
    @Test
    void verifyFindsAnIndexThatDisagreesWithItsTable() {
        db = Engines.open(dir);
        Table<Long, User> users = db.table("users", Codec.LONG, Codec.json(User.class));
        db.index(users, "users.by-name", Codec.STRING, (id, u) -> u.name());
        db.write(txn -> {
            users.put(txn, 1L, new User("ada", "a@example.org"));
            return null;
        }).join();
        db.close();
        db = Engines.open(dir);
        Table<Long, User> reopened = db.table("users", Codec.LONG, Codec.json(User.class));
        Index<String, Long, User> wrong = db.index(reopened, "users.by-name", Codec.STRING, (id, u) -> u.email());
        DbException.Corrupt e = fails(DbException.Corrupt.class, () -> db.read(txn -> wrong.verify(txn)).join());
        assertTrue(e.getMessage().contains("lacks the entry of row 1"), e.getMessage());
        assertThrows(DbException.Corrupt.class, () -> db.verify());
    }

    @Test
    void aCounterRowAddsInTheSameWriteAsTheRowsItCounts() {
        db = Engines.open(dir);
        Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
        Table<String, Long> counts = db.table("counts", Codec.STRING, Codec.LONG);
        for (int i = 0; i < 5; i++) {
            long id = i;
            db.write(txn -> {
                messages.put(txn, Tuple.of("lobby", id), "m" + id);
                return counts.add(txn, "lobby", 1);
            }).join();
        }
        assertEquals(5L, db.read(txn -> counts.get(txn, "lobby")).join());
        assertEquals(4L, db.write(txn -> counts.add(txn, "lobby", -1)).join());
        Table<String, String> notCounters = db.table("strings", Codec.STRING, Codec.STRING);
        CompletionException e = assertThrows(CompletionException.class, () -> db.write(txn -> notCounters.add(txn, "k", 1)).join());
        assertTrue(e.getCause().getMessage().contains("Codec.LONG"), e.getCause().getMessage());
        assertThrows(CompletionException.class, () -> db.read(txn -> counts.add(txn, "lobby", 1)).join());
    }

    @Test
    void anIndexNameIsItsOwn() {
        db = Engines.open(dir);
        Table<Long, String> t = db.table("t", Codec.LONG, Codec.STRING);
        Index<String, Long, String> i = db.index(t, "t.by-value", Codec.STRING, (k, v) -> v);
        assertTrue(i == db.index(t, "t.by-value", Codec.STRING, (k, v) -> v), "the same object for the same name");
        assertThrows(IllegalArgumentException.class, () -> db.uniqueIndex(t, "t.by-value", Codec.STRING, (k, v) -> v));
        assertThrows(IllegalArgumentException.class, () -> db.index(t, "t", Codec.STRING, (k, v) -> v));
    }
}

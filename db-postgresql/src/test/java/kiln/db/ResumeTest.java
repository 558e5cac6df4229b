package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.postgresql.TestPostgres;

/**
 * A reader resumes on server b with a sequence number server a gave it, before b has heard of a's
 * commits (its notification is on the way: here it never comes). b catches up from the feed's log
 * and answers, on table feeds and prefix feeds alike, instead of telling the reader to reload (a
 * table feed) or waiting for ever (a prefix feed); a number that no server gave is refused at once.
 */
class ResumeTest {
    @TempDir
    Path dir;

    @Test
    void aNumberAnotherServerGaveIsCaughtUpFromTheLogAndOneNoServerGaveIsRefused() {
        KvEngine deaf = new ForwardingEngine(TestPostgres.engine(dir)) {
            @Override
            public void onCommits(Consumer<String> changed) {
                // b hears nothing of a's commits
            }
        };
        try (Db a = Db.builder(TestPostgres.engine(dir)).open(); Db b = Db.builder(deaf).open()) {
            Table<Tuple, String> ta = a.table("messages", Codec.TUPLE, Codec.STRING);
            Table<Tuple, String> tb = b.table("messages", Codec.TUPLE, Codec.STRING);
            ChangeFeed<Tuple, String> fa = a.changeFeed(ta, 1000);
            ChangeFeed<Tuple, String> fb = b.changeFeed(tb, 1000);
            long start = fb.lastSeq();
            for (int i = 1; i <= 3; i++) {
                int n = i;
                a.write(txn -> { ta.put(txn, Tuple.of("lobby", n), "hello " + n); return null; }).join();
            }
            long given = fa.lastSeq();
            assertEquals(start, fb.lastSeq(), "b has not heard");

            PrefixFeed.Changes<Tuple, String> lobby = fb.prefix(Tuple.of("lobby")).read(given - 1, 10);
            assertEquals(List.of(given), lobby.sets().stream().map(ChangeSet::seq).toList(), "the prefix feed caught up: " + lobby);
            assertEquals(given, fb.lastSeq());
            assertEquals(List.of(), fb.read(given, 10), "nothing after the number a gave");

            DbException.Expired ahead = assertThrows(DbException.Expired.class, () -> fb.read(given + 100, 10));
            assertTrue(ahead.getMessage().contains("is ahead of the feed of 'messages', whose newest is " + given), ahead.getMessage());
            assertThrows(DbException.Expired.class, () -> fb.prefix(Tuple.of("lobby")).read(given + 100, 10), "no more waiting for ever");
        }
    }
}

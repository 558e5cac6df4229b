package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A writer killed between a durable commit and its announcement: nothing was announced that was not
 * committed, and a reader that resumes after the last set it saw gets the unannounced one.
 */
class ChangeFeedKillTest {
    private static final int PAUSE_AT = 40;

    @TempDir Path dir;

    @Test
    void aCrashBetweenCommitAndAnnouncementLosesNothingAndAnnouncesNothingUncommitted() throws Exception {
        Path data = dir.resolve("data");
        Path stderr = dir.resolve("child-stderr.txt");
        Process child = new ProcessBuilder(ChildJvm.command(KillFeedMain.class, data.toString(), String.valueOf(PAUSE_AT)))
            .redirectError(stderr.toFile()).start();
        List<String> lines = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; System.nanoTime() < deadline && (line = r.readLine()) != null; ) {
                lines.add(line);
                if (line.startsWith("PAUSED")) break;
            }
            Thread.sleep(200);  // let the reader print anything it would (it must not see the paused commit)
            while (r.ready()) lines.add(r.readLine());
        } finally {
            child.destroyForcibly();  // SIGKILL
        }
        assertTrue(child.waitFor(30, TimeUnit.SECONDS), "child did not die");
        assertTrue(lines.contains("PAUSED " + PAUSE_AT), "child output " + lines + "; stderr: " + Files.readString(stderr));

        long maxSeen = lines.stream().filter(l -> l.startsWith("SEEN ")).mapToLong(l -> Long.parseLong(l.substring(5))).max().orElse(0);
        assertFalse(lines.contains("ACK " + PAUSE_AT), "the paused write was not acknowledged");
        assertEquals(PAUSE_AT - 1, maxSeen, "every earlier set was announced, the paused one was not");

        try (Db db = Db.open(data)) {
            Table<Integer, Integer> table = db.table("t", Codec.INT, Codec.INT);
            ChangeFeed<Integer, Integer> feed = db.changeFeed(table, 1000);
            assertEquals(PAUSE_AT, feed.lastSeq(), "the paused commit is durable, in the log");
            List<ChangeSet<Integer, Integer>> resumed = feed.read(maxSeen, 10);
            assertEquals(1, resumed.size());
            assertEquals(new ChangeSet.Change<>(PAUSE_AT, PAUSE_AT * 10), resumed.get(0).changes().get(0),
                "a reader resuming after its last seen set gets the unannounced one");
            for (int i = 1; i < PAUSE_AT; i++) {
                int k = i;
                assertEquals(k * 10, db.read(txn -> table.get(txn, k)).join(), "acknowledged write " + k);
            }
        }
    }
}

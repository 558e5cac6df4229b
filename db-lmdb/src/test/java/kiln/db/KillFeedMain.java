package kiln.db;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Child process for {@link ChangeFeedKillTest}: writes key {@code i} = {@code i * 10} for i = 1, 2, ...
 * into a table with a change feed, one write at a time, printing {@code ACK i} once the write's
 * future completes; a read thread prints {@code SEEN seq} for every change set the feed announces.
 * After the commit of write {@code args[1]} the writer thread stops between that commit and its
 * announcement, prints {@code PAUSED i} and waits there to be killed.
 */
public final class KillFeedMain {
    private KillFeedMain() {
    }

    public static void main(String[] args) throws Exception {
        int pauseAt = Integer.parseInt(args[1]);
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        int[] commits = {0};
        Db db = Db.builder(Path.of(args[0])).betweenCommitAndPublish(() -> {
            if (++commits[0] < pauseAt) return;
            out.println("PAUSED " + commits[0]);
            try {
                new CountDownLatch(1).await();  // until SIGKILL
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }).open();
        Table<Integer, Integer> table = db.table("t", Codec.INT, Codec.INT);
        ChangeFeed<Integer, Integer> feed = db.changeFeed(table, 1000);
        Thread reader = new Thread(() -> {
            long seen = 0;
            while (true) {
                feed.after(seen).join();
                List<ChangeSet<Integer, Integer>> sets = feed.read(seen, 100);
                for (ChangeSet<Integer, Integer> set : sets) out.println("SEEN " + set.seq());
                seen = sets.get(sets.size() - 1).seq();
            }
        }, "feed-reader");
        reader.setDaemon(true);
        reader.start();
        for (int i = 1; ; i++) {
            int k = i;
            db.write(txn -> { table.put(txn, k, k * 10); return null; }).join();
            out.println("ACK " + k);
        }
    }
}

package kiln.db;

import java.io.PrintStream;
import java.nio.file.Path;

/**
 * Child process for {@link KillDurabilityTest}: opens the database in {@code args[0]} and writes from
 * {@code args[1]} threads until killed, printing {@code ACK <key>} only after that key's write future
 * completed (that is, after its commit was fsync'ed). Key {@code k} holds {@link #valueOf(int)}.
 */
public final class KillWriterMain {
    private KillWriterMain() {
    }

    static String valueOf(int key) {
        return "value-of-" + key;
    }

    public static void main(String[] args) throws Exception {
        Db db = Db.open(Path.of(args[0]));
        Table<Integer, String> table = db.table("acked", Codec.INT, Codec.STRING);
        int threads = Integer.parseInt(args[1]);
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        for (int th = 0; th < threads; th++) {
            int first = th * 10_000_000;
            Thread writer = new Thread(() -> {
                for (int key = first; ; key++) {
                    int k = key;
                    String v = valueOf(k);
                    db.write(txn -> { table.put(txn, k, v); return null; }).join();
                    synchronized (out) {
                        out.println("ACK " + k);
                        out.flush();
                    }
                }
            }, "kill-writer-" + th);
            writer.start();
        }
    }
}

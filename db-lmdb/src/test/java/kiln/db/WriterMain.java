package kiln.db;

import java.nio.file.Path;

/**
 * Child process for {@link LockTest}: a server's stand-in. Opens the database in {@code args[0]},
 * commits row 1 = "one", prints {@code READY}, and keeps the database open until its standard
 * input ends (then closes it and exits) or it is killed.
 */
public final class WriterMain {
    private WriterMain() {
    }

    public static void main(String[] args) throws Exception {
        try (Db db = Db.open(Path.of(args[0]))) {
            Table<Integer, String> t = db.table("t", Codec.INT, Codec.STRING);
            db.write(txn -> {
                t.put(txn, 1, "one");
                return null;
            }).join();
            System.out.println("READY");
            System.out.flush();
            while (System.in.read() >= 0) {
                // held open until the parent closes our input
            }
        }
    }
}

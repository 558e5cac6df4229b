package kiln.db;

import java.nio.file.Path;

/**
 * Child process for {@link NativeLibraryCopyTest}: opens the database in {@code args[0]}, writes and
 * reads one row, prints {@code OK <value>} and ends as a kiln server's stop does, with
 * {@link Runtime#halt}: no shutdown hook, so nothing {@link java.io.File#deleteOnExit} promised runs.
 */
public final class HaltMain {
    private HaltMain() {
    }

    public static void main(String[] args) {
        Db db = Db.open(Path.of(args[0]));
        Table<Integer, String> table = db.table("t", Codec.INT, Codec.STRING);
        db.write(txn -> {
            table.put(txn, 1, "one");
            return null;
        }).join();
        System.out.println("OK " + db.read(txn -> table.get(txn, 1)).join());
        db.close();
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}

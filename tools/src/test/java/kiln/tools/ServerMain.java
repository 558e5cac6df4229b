package kiln.tools;

import kiln.db.Db;
import kiln.demo.DemoDb;

/**
 * Child process for {@link BesideAServerTest}: a demo server's stand-in on the database at
 * {@code args[0]}. Opens it as a server does (its tables filled on first open), prints
 * {@code READY}, and keeps it open until its standard input ends or it is killed.
 */
public final class ServerMain {
    private ServerMain() {
    }

    public static void main(String[] args) throws Exception {
        try (Db db = Db.open(args[0])) {
            DemoDb.open(db);
            System.out.println("READY");
            System.out.flush();
            while (System.in.read() >= 0) {
                // open until the parent closes our input
            }
        }
    }
}

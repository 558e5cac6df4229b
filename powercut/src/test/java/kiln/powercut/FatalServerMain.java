package kiln.powercut;

import kiln.db.Codec;
import kiln.db.Table;
import kiln.server.Launcher;
import kiln.server.ServerOptions;

/**
 * A front end reduced to what {@link DiskFaultsTest} needs: {@link Launcher#run} over the data
 * directory in {@code args[0]}, with a "server" that writes every 20 ms instead of serving HTTP.
 */
public final class FatalServerMain {
    private FatalServerMain() {
    }

    public static void main(String[] args) {
        Launcher.run("fatal-test", ServerOptions.of("--data", args[0], "--port", "0"), db -> {
            Table<Integer, Long> t = db.table("ticks", Codec.INT, Codec.LONG);
            Thread writer = new Thread(() -> {
                for (long i = 0; ; i++) {
                    long n = i;
                    db.write(txn -> { t.put(txn, 0, n); return null; });
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "ticks");
            writer.setDaemon(true);
            writer.start();
            return new Launcher.Server() {
                @Override
                public int port() {
                    return 0;
                }

                @Override
                public void stop(long graceMillis) {
                    writer.interrupt();
                }
            };
        });
        try {
            Thread.sleep(Long.MAX_VALUE);  // the launcher's threads are daemons here: keep the JVM up
        } catch (InterruptedException ignored) {
            // exit
        }
    }
}

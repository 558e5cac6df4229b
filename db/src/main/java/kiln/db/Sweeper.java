package kiln.db;

import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Deletes the expired rows of a database's expiring tables ({@link Db#expiringTable}): a thread of
 * its own queues one write query at a time that deletes at most {@value Table#SWEEP_BATCH} rows whose
 * expiry passed, soonest first, so no transaction runs long and other writes take turns; it queues
 * the next at once while there were that many, else a second later. It looks with a read first, so
 * a database with nothing due commits nothing.
 */
final class Sweeper implements Runnable {
    private static final Logger LOG = Logger.getLogger(Sweeper.class.getName());
    /** How long the sweeper waits after a sweep that left nothing due, ms. */
    static final long PERIOD_MS = 1_000;

    private final Reads reads;
    private final Writer writer;
    private final DbState state;
    private final List<Table<?, ?>> tables = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private volatile boolean stopping;

    Sweeper(Reads reads, Writer writer, DbState state) {
        this.reads = reads;
        this.writer = writer;
        this.state = state;
        this.thread = new Thread(this, "kiln-db-expiry");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    void add(Table<?, ?> table) {
        tables.add(table);
    }

    void stop() {
        stopping = true;
        thread.interrupt();
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void run() {
        while (!stopping) {
            int n = 0;
            try {
                // a read first: an idle database commits nothing (DbStats.commits stays still)
                if (!reads.read(txn -> tables.stream().anyMatch(t -> t.hasDue(txn))).join()) {
                    pause();
                    if (stopping) return;
                    continue;
                }
                n = writer.write(txn -> {
                    int done = 0;
                    for (Table<?, ?> t : tables) {
                        if (done >= Table.SWEEP_BATCH) break;
                        done += t.sweep(txn, Table.SWEEP_BATCH - done);
                    }
                    return done;
                }).join();
            } catch (CompletionException e) {
                if (stopping || state.isClosed()) return;
                LOG.log(Level.WARNING, "sweeping expired rows failed; trying again in " + PERIOD_MS + " ms", e.getCause());
            }
            if (n < Table.SWEEP_BATCH) pause();
        }
    }

    /** Waits {@link #PERIOD_MS}, or until {@link #stop}. */
    private void pause() {
        try {
            Thread.sleep(PERIOD_MS);
        } catch (InterruptedException e) {
            // stop() interrupts: the loop sees stopping
        }
    }
}

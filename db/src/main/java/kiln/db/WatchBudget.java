package kiln.db;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The pending {@link ChangeFeed#watch watches} of one database, over every feed, capped
 * ({@link Db.Builder#maxWatches}, FoundationDB's per-client default of 10,000).
 */
final class WatchBudget {
    private final int max;
    private final AtomicInteger pending = new AtomicInteger();

    WatchBudget(int max) {
        this.max = max;
    }

    /** @return a pending watch's place under the cap, or false when there is none left */
    boolean reserve() {
        if (pending.incrementAndGet() <= max) return true;
        pending.decrementAndGet();
        return false;
    }

    /** Gives back a place {@link #reserve} gave. */
    void release() {
        pending.decrementAndGet();
    }

    int max() {
        return max;
    }
}

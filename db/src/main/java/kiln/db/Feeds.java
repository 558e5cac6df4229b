package kiln.db;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;

/**
 * The database's open {@link ChangeFeed}s: what the writer and the engine tell all of them — a
 * writer with nothing to do ({@link #idle}), a commit by another process sharing the engine
 * ({@link #committedElsewhere}), the database's close — and the thread that wakes their subscribers
 * ({@link Wakes}).
 */
final class Feeds {
    /** How long a change feed's subscribers wait on one future at most; see {@link ChangeFeed#renewIfOlder}. */
    private static final long RENEW_NANOS = 60_000_000_000L;

    private final List<ChangeFeed<?, ?>> opened = new ArrayList<>();
    /** The feeds by their tables; guarded by this object. */
    private final Map<Table<?, ?>, ChangeFeed<?, ?>> byTable = new IdentityHashMap<>();
    /** Completes the feeds' subscribers' futures, off the writer thread. */
    private final Wakes wakes = new Wakes();
    /** {@link #opened} as the writer and the engine's thread read it, without a lock: replaced whole when a feed opens. */
    private volatile List<ChangeFeed<?, ?>> all = List.of();

    /** @return the wake thread every feed hands its subscribers' completions to */
    Wakes wakes() {
        return wakes;
    }

    synchronized void add(ChangeFeed<?, ?> feed) {
        opened.add(feed);
        byTable.put(feed.table(), feed);
        all = List.copyOf(opened);
    }

    /** @return the feed of {@code table}, or null when none was opened */
    @SuppressWarnings("unchecked")
    synchronized <K, V> ChangeFeed<K, V> of(Table<K, V> table) {
        return (ChangeFeed<K, V>) byTable.get(table);
    }

    /** On the writer thread while it has no work: see {@link ChangeFeed#renewIfOlder}. */
    void idle() {
        for (ChangeFeed<?, ?> feed : all) feed.renewIfOlder(RENEW_NANOS);
    }

    /**
     * On the engine's thread, when another process sharing it committed to {@code space} (null: to
     * any, {@link KvEngine#onCommits}): the feeds whose log it is publish what they have not yet.
     */
    void committedElsewhere(String space) {
        for (ChangeFeed<?, ?> feed : all) {
            if (space != null && !space.equals(feed.logName())) continue;
            try {
                feed.catchUp();
            } catch (RuntimeException e) {  // the database unreachable: the next notification or poll tries again
                Logger.getLogger(Feeds.class.getName()).fine(() -> "catching up on " + feed + ": " + e);
            }
        }
    }

    /**
     * At the database's close: wakes every feed's subscribers and watches with {@link DbException.Closed},
     * after the wakes of every set published before, and stops the wake thread.
     */
    void close() {
        List<ChangeFeed<?, ?>> feeds = all;
        wakes.stop(() -> {
            for (ChangeFeed<?, ?> feed : feeds) feed.close();
        });
    }
}

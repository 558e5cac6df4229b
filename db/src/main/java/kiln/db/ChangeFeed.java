package kiln.db;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The committed changes of one table, in commit order, each write query's changes numbered by a
 * durable commit sequence number ({@link ChangeSet#seq}): what a live page, a notification stream or
 * a cache waits on instead of polling. Open it once, at start-up, with {@link Db#changeFeed}.
 *
 * <pre>{@code
 * ChangeFeed<Integer, Integer> feed = db.changeFeed(worlds, 10_000);
 * long seen = feed.lastSeq();
 * while (true) {
 *     await(feed.after(seen));                          // a fiber pauses, a thread blocks: no polling
 *     for (ChangeSet<Integer, Integer> set : feed.read(seen, 100)) {
 *         send(set);
 *         seen = set.seq();
 *     }
 * }
 * }</pre>
 *
 * <h2>How it works</h2>
 * The writer thread records what a write query puts into and deletes from the table (only for a
 * table with a feed: other tables cost nothing), and in the same LMDB transaction appends the
 * query's {@link ChangeSet} to the feed's log (a table of its own, {@code kiln.changes.<table>}),
 * keeping the last {@code window} sets. Only after the commit is durable (fsync) does it publish
 * the sets: to the last few thousand kept in memory, to {@link #after}'s futures and to the
 * {@link #watch}es. So nothing is ever published that was not committed, and a crash between the
 * commit and the publishing loses nothing: the log has the sets, and a subscriber that resumes after its
 * last sequence number gets them.
 *
 * <h2>Memory</h2>
 * A waiting subscriber holds no queue of its own: it holds the sequence number it has seen and waits on
 * one future shared by every subscriber ({@link #after}). A slow subscriber therefore costs nothing while it
 * lags; once it lags by more than the window, {@link #read} tells it so ({@link DbException.Expired})
 * and it must reload. The memory kept is the window's newest {@value #MAX_IN_MEMORY} sets at most;
 * older ones are read from the log.
 *
 * <h2>Threads</h2>
 * Every method may be called from any thread. {@link #after}'s futures and the watches complete on
 * the database's one wake thread, {@code kiln-feed-wake}, in publish order, handed over by the writer
 * thread once the commit is durable (or, for sets committed by another server over a shared engine
 * such as PostgreSQL, by the thread that read them from the log): keep their callbacks short (a
 * fiber's resume, a thread's unpark), since every subscriber of every feed waits behind them.
 *
 * <h2>Many servers over one engine</h2>
 * Over PostgreSQL every server appends to the same log: a write numbers its set after the log's
 * newest in its own transaction (the servers' writers take turns, and under serializable isolation
 * two appending at once would conflict and one run again), so the numbers stay gap-free in commit
 * order. Each server publishes its own sets after
 * its commit and learns of the others' from the engine ({@link KvEngine#onCommits}: LISTEN/NOTIFY,
 * and a poll every second in case a notification was missed), reading them from the log: a subscriber
 * on any server gets every set, in order, and resumes after its sequence number on any server.
 *
 * @param <K> the table's key type; {@link #watch} compares keys with {@code equals}
 * @param <V> the table's value type; the feed delivers each value decoded from the bytes the table got at
 *            {@code put}, so a caller that changes its object afterwards changes nothing recorded
 */
public final class ChangeFeed<K, V> {
    /** The most change sets kept in memory; older ones within the window are read from the log. */
    static final int MAX_IN_MEMORY = 4096;
    /** The prefix of a feed's log table's name. */
    static final String LOG_PREFIX = "kiln.changes.";

    private final DbState state;
    /** Reads the log, for sets older than memory keeps and those other servers committed. */
    private final Reads reads;
    private final WatchBudget watchBudget;
    /** Runs the completions of its subscribers' futures ({@link #wake}). */
    private final Wakes wakes;
    private final Table<K, V> table;
    private final Table<Long, Logged<K, V>> log;
    private final int window;
    /** The newest sets, set {@code s} at {@code s % ring.length}; read without a lock (see {@link #read}). */
    private final ChangeSet<K, V>[] ring;
    /** The newest published (durable) sequence number, 0 while the log is empty. Written by the writer thread only. */
    private volatile long lastSeq;
    /** The oldest sequence number still in the log (lastSeq + 1 while it is empty). */
    private volatile long oldestSeq;
    /** Completes at the next publish (or {@link #renewIfOlder}); replaced by a new one then. */
    private volatile QueryFuture<Void> next = new QueryFuture<>();
    /** System.nanoTime() when {@link #next} was made; under this object's lock. */
    private long nextMadeAt = System.nanoTime();
    /** Pending watches by key; guarded by itself. */
    private final Map<K, List<Watch<K, V>>> watches = new HashMap<>();
    // Writer thread only: the sequence numbers handed out in the batch being run. Under this object's
    // lock (the writer's thread or the engine's, see catchUp): the sets published and not yet woken for.
    private long staged;
    private long stagedBatch = -1;
    private final List<ChangeSet<K, V>> unannounced = new ArrayList<>();
    /** Set by {@link #start}: before it, {@link #catchUp} has no place in the log to go on from. */
    private volatile boolean started;
    /** The subscribers of {@link #prefix} feeds, by prefix. */
    private final PrefixGroups<K, V> prefixes;
    /** This feed as its {@link #prefix} feeds read it. */
    private final PrefixFeed.Source<K, V> source = new PrefixFeed.Source<>() {
        @Override public long lastSeq() { return lastSeq; }
        @Override public List<ChangeSet<K, V>> read(Txn txn, long seq, int max) { return ChangeFeed.this.read(txn, seq, max); }
        @Override public void catchUpTo(Txn txn, long seq) { ChangeFeed.this.catchUpTo(txn, seq); }
    };

    @SuppressWarnings("unchecked")
    ChangeFeed(DbState state, Reads reads, WatchBudget watchBudget, Wakes wakes, Table<K, V> table, Table<Long, Logged<K, V>> log,
               int window) {
        this.state = state;
        this.reads = reads;
        this.watchBudget = watchBudget;
        this.wakes = wakes;
        this.table = table;
        this.log = log;
        this.window = window;
        this.ring = (ChangeSet<K, V>[]) new ChangeSet<?, ?>[Math.min(window, MAX_IN_MEMORY)];
        this.prefixes = new PrefixGroups<>(table.keys(), table::bytes, () -> lastSeq);
    }

    /**
     * The changes under one key prefix, waking only their subscribers: a room's,
     * {@code PrefixFeed<Tuple, Message> room = feed.prefix(Tuple.of(roomName))}, or one row's. Cheap:
     * make one per request or subscriber; the subscribers of one prefix share its group.
     *
     * @param prefix a key prefix of the table (with {@link Codec#TUPLE} keys, whole elements:
     *               {@code Tuple.of(room)}); a whole key follows one row
     * @return the feed of the changes under {@code prefix}, whose subscribers only its commits wake; see
     *         {@link PrefixFeed}
     */
    public PrefixFeed<K, V> prefix(K prefix) {
        return new PrefixFeed<>(source, reads, table.name(), prefixes, prefix, table.bytes(prefix));
    }

    /** @return the table whose changes this is */
    public Table<K, V> table() {
        return table;
    }

    /** @return how many of the newest change sets the log keeps: how far a subscriber may lag and resume */
    public int window() {
        return window;
    }

    /**
     * Where a new subscriber starts, having seen nothing yet: {@code long seen = feed.lastSeq();}, then
     * {@link #after}{@code (seen)} and {@link #read}{@code (seen, n)}; also a stream's
     * {@code Last-Event-ID} when the client sends none.
     *
     * @return the newest committed (durable) sequence number; 0 while nothing was recorded
     */
    public long lastSeq() {
        return lastSeq;
    }

    /** @return the oldest sequence number {@link #read} can still give ({@code lastSeq() + 1} while none is kept) */
    public long oldestSeq() {
        return oldestSeq;
    }

    /**
     * Waits for the table's next commit without a thread: {@code await(feed.after(seen))} in a fiber,
     * {@code feed.after(seen).join()} on a virtual or plain thread, or the future a stream's
     * {@code poll} returns; then {@link #read} what is new.
     *
     * @param seq a sequence number the caller has seen (0 for none)
     * @return a future that completes once a change set newer than {@code seq} is durable: at once
     *         when there is one already; else the one future every subscriber shares, completed (on the
     *         wake thread) at the next publish, or failed with {@link DbException.Closed} when the
     *         database closes. The same object until then, so a caller that waits again on it (after
     *         a timeout) registers nothing new. It may also complete with nothing new, after a
     *         minute without a publish (see {@link Db}'s writer): read, then wait again.
     */
    public QueryFuture<Void> after(long seq) {
        QueryFuture<Void> f = next;  // read before lastSeq: publish writes lastSeq before it replaces next
        if (lastSeq > seq || f.isDone()) {
            if (f.isCompletedExceptionally()) return f;
            return QueryFuture.succeeded(null);
        }
        return f;
    }

    /**
     * The change sets after {@code seq}, oldest first, from memory or else from the log.
     *
     * @param seq a sequence number the caller has seen (0 for none: then every set kept)
     * @param max the most sets to return, >= 1
     * @return up to {@code max} sets with sequence numbers {@code seq + 1, seq + 2, ...}; empty when
     *         there is none yet (wait with {@link #after})
     * @throws DbException.Expired when {@code seq} is older than the window keeps (the caller lagged
     *         by more than {@link #window()} sets) or newer than the feed's log holds (a number from
     *         before a restore, or not from this feed): reload, then go on from {@link #lastSeq()}
     */
    public List<ChangeSet<K, V>> read(long seq, int max) {
        return read(null, seq, max);
    }

    /**
     * {@link #read} without a round trip on the calling thread, for fiber and event-loop code: the
     * future is complete at once when the sets are in memory (the newest min(window, 4096), so nearly
     * always); else the log is read as any read query is ({@link Db#read}: on LMDB at once, over
     * PostgreSQL on a read thread, where the future completes) — a subscriber that lags far behind, a
     * set another server committed that this one has not heard of yet, sets from before a restart.
     *
     * @return the sets, as {@link #read} returns them; failed with {@link DbException.Expired} where
     *         {@link #read} throws it
     */
    public QueryFuture<List<ChangeSet<K, V>>> readAsync(long seq, int max) {
        if (max < 1) throw new IllegalArgumentException("max must be >= 1, got " + max);
        List<ChangeSet<K, V>> kept;
        try {
            kept = seq <= lastSeq ? fromMemory(seq, max) : null;
        } catch (DbException.Expired e) {
            return QueryFuture.failed(e);
        }
        return kept != null ? QueryFuture.succeeded(kept) : reads.read(txn -> read(txn, seq, max));
    }

    /**
     * @return the sets after {@code seq} when memory holds every one of them (none is older than
     *         the ring keeps or overwritten), else null: the log must be read
     * @throws DbException.Expired when {@code seq} is older than the window keeps
     */
    private List<ChangeSet<K, V>> fromMemory(long seq, int max) {
        long last = lastSeq;
        if (seq < oldestSeq - 1) throw new DbException.Expired(behind(seq));
        int n = (int) Math.max(0, Math.min(max, last - seq));
        List<ChangeSet<K, V>> sets = new ArrayList<>(n);
        for (long s = seq + 1; s <= seq + n; s++) {
            ChangeSet<K, V> set = ring[(int) (s % ring.length)];
            if (set == null || set.seq() != s) return null;
            sets.add(set);
        }
        return sets;
    }

    /**
     * {@link #read}, reading the log (when it must) in {@code txn}, a read query's transaction, or
     * in a read of its own on the calling thread when {@code txn} is null.
     */
    List<ChangeSet<K, V>> read(Txn txn, long seq, int max) {
        if (max < 1) throw new IllegalArgumentException("max must be >= 1, got " + max);
        if (seq > lastSeq) catchUpTo(txn, seq);
        List<ChangeSet<K, V>> kept = fromMemory(seq, max);
        if (kept != null) return kept;
        // older than memory keeps, or overwritten since: the log has them (or Expired says they went)
        int n = (int) Math.min(max, lastSeq - seq);
        List<ChangeSet<K, V>> sets = new ArrayList<>(n);
        readLog(txn, seq + 1, seq + n, sets);
        return sets;
    }

    /**
     * A subscriber brought {@code seq}, newer than this process has published: over a shared engine,
     * another server committed it and this one has not heard yet (its notification is on the way).
     * The log has it then: the feed catches up from the log at once, on the calling thread, and the
     * subscriber goes on as if it had been here all along.
     *
     * @throws DbException.Expired when the log does not hold {@code seq} either (no server gave it),
     *         or the feed could not catch up to it (not started yet)
     */
    void catchUpTo(Txn txn, long seq) {
        catchUp(txn);
        long last = lastSeq;
        if (last < seq) {
            throw new DbException.Expired("sequence number " + seq + " is ahead of the feed of '" + table.name() + "', whose newest is "
                + last + " (from before a restore, or from another feed): reload");
        }
    }

    private void readLog(Txn txn, long from, long to, List<ChangeSet<K, V>> into) {
        List<ChangeSet<K, V>> found = logged(txn, from, to, Integer.MAX_VALUE);
        if (found.isEmpty() || found.get(0).seq() != from) throw new DbException.Expired(behind(from - 1));
        into.addAll(found);
    }

    /**
     * @return the log's sets from {@code from} to {@code to}, oldest first, at most {@code max}; read
     *         in {@code txn}, or, when it is null, in a read of its own on the calling thread
     */
    private List<ChangeSet<K, V>> logged(Txn txn, long from, long to, int max) {
        List<ChangeSet<K, V>> found = new ArrayList<>();
        java.util.function.BiPredicate<Long, Logged<K, V>> keep = (s, logged) -> {
            if (s > to) return false;
            found.add(logged.changeSet(s));
            return found.size() < max;
        };
        if (txn == null) reads.inline(t -> log.scan(t, from, keep));
        else log.scan(txn, from, keep);
        return found;
    }

    private String behind(long seq) {
        return "sequence number " + seq + " is older than the feed of '" + table.name() + "' keeps (it keeps the last "
            + window + ", from " + oldestSeq + "): reload";
    }

    /**
     * Watches one key, as FoundationDB's {@code watch}: a future that completes with the first change
     * set, committed after the snapshot of {@code txn}, that changes {@code key}. Read the value
     * and watch it in the same read query, so no change between the two is missed:
     * <pre>{@code
     * var seen = db.read(txn -> new Seen(worlds.get(txn, id), feed.watch(txn, id))).join();
     * ChangeSet<Integer, Integer> set = await(seen.watch());   // the next change of row id
     * }</pre>
     * A watch costs a map entry until it fires; cancel the future (or time out a copy of it) to give
     * it up, which removes it.
     *
     * @param txn a read query's transaction
     * @return the future; failed with {@link DbException.TooManyWatches} beyond
     *         {@link Db.Builder#maxWatches} pending watches, with {@link DbException.Closed} when the
     *         database closes first
     * @throws IllegalStateException inside a write query (its changes are not committed yet)
     */
    public CompletableFuture<ChangeSet<K, V>> watch(Txn txn, K key) {
        if (!txn.isReadOnly()) throw new IllegalStateException("watch() needs a read query's transaction: a write query's changes are not committed yet");
        Long logged = log.lastKey(txn);
        long seen = logged == null ? 0 : logged;
        CompletableFuture<ChangeSet<K, V>> future = new CompletableFuture<>();
        Watch<K, V> w = new Watch<>(key, seen, future);
        for (long checked = seen; ; ) {
            long last = lastSeq;
            if (last > checked) {  // published since the snapshot (rare: a few microseconds' window)
                try {  // without the lock: sets older than memory keeps are read from the log, a round trip over PostgreSQL
                    for (ChangeSet<K, V> set : read(checked, (int) Math.min(Integer.MAX_VALUE, last - checked))) {
                        if (set.touches(key)) {
                            future.complete(set);
                            return future;
                        }
                    }
                } catch (DbException.Expired e) {
                    future.completeExceptionally(e);
                    return future;
                }
                checked = last;
            }
            synchronized (watches) {  // a set published from here on is announced after this: it fires the watch
                if (lastSeq > checked) continue;  // published while it read: look at those too
                if (!watchBudget.reserve()) {
                    future.completeExceptionally(new DbException.TooManyWatches("more than " + watchBudget.max()
                        + " watches are pending (Db.builder(dir).maxWatches(n) raises the cap); give up some (cancel their futures)"));
                    return future;
                }
                watches.computeIfAbsent(key, k -> new ArrayList<>(1)).add(w);
                break;
            }
        }
        future.whenComplete((set, failure) -> {
            if (failure != null) forget(w);  // given up (cancelled, timed out) or the database closed
        });
        return future;
    }

    private void forget(Watch<K, V> w) {
        synchronized (watches) {
            List<Watch<K, V>> list = watches.get(w.key);
            if (list != null && list.remove(w)) {
                watchBudget.release();
                if (list.isEmpty()) watches.remove(w.key);
            }
        }
    }

    /**
     * On the writer thread, inside the batch's transaction: numbers one write query's changes and
     * appends them to the log, dropping the set that leaves the window.
     *
     * @param batch the writer's batch number: numbering restarts from {@link #lastSeq} in a new batch
     *              (a batch that failed or is re-run published nothing)
     */
    ChangeSet<K, V> stage(long batch, Txn parent, List<Recorded<K, V>> changes, long committedAt) {
        if (stagedBatch != batch) {
            stagedBatch = batch;
            // the log's newest in this transaction, not lastSeq: over a shared engine another server may
            // have appended sets this one has not published yet (reading it also makes two servers that
            // append at once conflict, so one runs again): numbers stay gap-free in commit order
            Long logged = log.lastKey(parent);
            staged = logged == null ? 0 : logged;
        }
        Logged<K, V> logged = new Logged<>(committedAt, List.copyOf(changes));
        ChangeSet<K, V> set = logged.changeSet(++staged);
        log.put(parent, set.seq(), logged);
        if (set.seq() - window >= 1) log.delete(parent, set.seq() - window);
        return set;
    }

    /**
     * On the writer thread, once {@code set}'s commit is durable: keeps it, newest, after the sets
     * other processes committed before it (read from the log, without the feed's lock, as
     * {@link #catchUp} reads it), unless {@link #catchUp} kept it already. Then {@link #wake}.
     */
    void publish(ChangeSet<K, V> set) {
        if (set.seq() > lastSeq + 1) keepLogged(set.seq() - 1);
        synchronized (this) {
            if (set.seq() <= lastSeq) return;  // kept by catchUp, from the log
            keep(set);
        }
    }

    private void keep(ChangeSet<K, V> set) {
        ring[(int) (set.seq() % ring.length)] = set;
        oldestSeq = Math.max(oldestSeq, set.seq() - window + 1);
        lastSeq = set.seq();
        unannounced.add(set);
    }

    /**
     * Keeps the sets the log has after {@link #lastSeq}, up to {@code to}: those other processes
     * committed. Each read of the log runs without the feed's lock (over a shared engine it is a
     * round trip, which a {@link #catchUp} or a subscriber's {@link #wake} would wait for); what was read
     * is kept under it, skipping what {@link #catchUp} kept meanwhile.
     */
    private void keepLogged(long to) {
        while (lastSeq < to) {
            List<ChangeSet<K, V>> found = logged(null, lastSeq + 1, to, MAX_IN_MEMORY);
            if (found.isEmpty()) return;
            synchronized (this) {
                for (ChangeSet<K, V> set : found) {
                    if (set.seq() > lastSeq) keep(set);  // a gap the window trimmed meanwhile: subscribers of it get Expired
                }
            }
        }
    }

    /**
     * When another process sharing the engine committed to the log ({@link KvEngine#onCommits}), on
     * the engine's thread (or the writer's, for a feed whose publish failed): keeps and announces the
     * sets this process has not published yet. The log is read without the feed's lock, so that the
     * writer's {@link #publish} never waits behind this round trip; what was read is kept under it,
     * skipping what the writer published meanwhile.
     */
    void catchUp() {
        catchUp(null);
    }

    /** {@link #catchUp}, reading the log in {@code txn} (a read query's), or in a read of its own when it is null. */
    private void catchUp(Txn txn) {
        if (!started) return;
        while (true) {
            List<ChangeSet<K, V>> found = logged(txn, lastSeq + 1, Long.MAX_VALUE, MAX_IN_MEMORY);
            synchronized (this) {
                for (ChangeSet<K, V> set : found) {
                    if (set.seq() > lastSeq) keep(set);  // a gap the window trimmed meanwhile: subscribers of it get Expired
                }
            }
            if (found.size() < MAX_IN_MEMORY) break;
        }
        wake();
    }

    /**
     * On the writer thread, inside a write query: records a put or a delete the query made on the
     * table ({@link Table.Recorder}), to be numbered and logged with the query's set at the batch's
     * commit ({@link #stage}).
     */
    void record(Txn txn, Recorded<K, V> change) {
        txn.changed(this, change);
    }

    /** @return the name of the table that logs the sets */
    String logName() {
        return log.name();
    }

    /**
     * After the batch's {@link #publish}es (on the writer thread) or a {@link #catchUp}: wakes the
     * subscribers — the shared future, the prefix feeds' and the watches of the keys changed; nothing
     * when nothing was published since the last call. Who is woken is decided under the feed's lock
     * and handed to the database's wake thread ({@link Wakes}) in publish order, which completes the
     * futures: their callbacks (a fiber's resumption, a stream's next step) neither run holding the
     * lock nor hold up the writer's next batch. Futures nobody awaits are completed here (there is
     * nothing to run), and so is everything after the database's close, once the lock is released.
     */
    void wake() {
        Wake<K, V> w;
        synchronized (this) {
            w = announce();
            if (w == null || w.awaited() && wakes.offer(w)) return;
        }
        w.run();  // nothing awaits them, so nothing runs (or the database closed): here, holding no lock
    }

    /**
     * What one {@link #wake} completes: the subscribers' shared future (null when it was not renewed), the
     * prefix groups' woken, the watches fired (null when none).
     */
    private record Wake<K, V>(QueryFuture<Void> waiting, List<QueryFuture<Void>> prefixReaders, List<Watch<K, V>> watchers)
        implements Runnable {
        /**
         * @return whether anyone may wait on these futures ({@link QueryFuture#awaited}; a watch fired
         *         is its caller's): when not, completing them runs nothing, and is not worth a hand-over
         *         (a feed nobody follows costs its writes nothing)
         */
        boolean awaited() {
            if (watchers != null || waiting != null && waiting.awaited()) return true;
            for (QueryFuture<Void> f : prefixReaders) {
                if (f.awaited()) return true;
            }
            return false;
        }

        @Override
        public void run() {
            if (waiting != null) waiting.succeed(null);
            for (QueryFuture<Void> f : prefixReaders) f.succeed(null);
            if (watchers != null) {
                for (Watch<K, V> w : watchers) w.future.complete(w.set);
            }
        }
    }

    /** @return what {@link #wake} completes, taken from the sets not yet announced; null when there are none */
    private Wake<K, V> announce() {
        if (unannounced.isEmpty()) return null;
        List<ChangeSet<K, V>> published = List.copyOf(unannounced);
        unannounced.clear();
        QueryFuture<Void> waiting = renew();
        List<Watch<K, V>> fired = null;
        synchronized (watches) {
            if (!watches.isEmpty()) {
                for (ChangeSet<K, V> set : published) {
                    for (ChangeSet.Change<K, V> c : set.changes()) {
                        List<Watch<K, V>> list = watches.get(c.key());
                        if (list == null) continue;
                        for (int i = list.size() - 1; i >= 0; i--) {
                            Watch<K, V> w = list.get(i);
                            if (set.seq() <= w.seen) continue;
                            list.remove(i);
                            watchBudget.release();
                            if (fired == null) fired = new ArrayList<>();
                            fired.add(w.firing(set));
                        }
                        if (list.isEmpty()) watches.remove(c.key());
                    }
                }
            }
        }
        return new Wake<>(waiting, prefixes.dispatch(published), fired);
    }

    /** @return the subscribers' shared future, replaced by a new one: complete it */
    private QueryFuture<Void> renew() {
        QueryFuture<Void> waiting = next;
        next = new QueryFuture<>();
        nextMadeAt = System.nanoTime();
        return waiting;
    }

    /**
     * On the writer thread while it has no work: when no set was published for {@code nanos},
     * completes the subscribers' shared future anyway. Waiting subscribers wake, find nothing new and wait
     * again; subscribers that left without waking (a stream whose client went away) let go of what they
     * registered on it. Without this, on a feed without writes, every subscriber that ever left would
     * stay registered.
     */
    void renewIfOlder(long nanos) {
        List<QueryFuture<Void>> groups = prefixes.idle(nanos);
        Wake<K, V> w;
        synchronized (this) {  // a catch-up's announce may renew it too, on the engine's thread
            boolean old = System.nanoTime() - nextMadeAt >= nanos;
            if (!old && groups.isEmpty()) return;
            w = new Wake<>(old ? renew() : null, groups, null);
            if (w.awaited() && wakes.offer(w)) return;
        }
        w.run();
    }

    /** @return whether the database's wake thread was started (a wake was handed over); for tests */
    boolean wakeThreadStarted() {
        return wakes.started();
    }

    /** @return how many prefixes have a group of subscribers ({@link PrefixFeed}); for tests */
    int prefixGroups() {
        return prefixes.size();
    }

    /** Opens the feed: reads where the log is, within the write query that switches the table's recording on. */
    synchronized void start(Txn txn) {
        Long last = log.lastKey(txn);
        Long first = log.firstKey(txn);
        lastSeq = last == null ? 0 : last;
        oldestSeq = first == null ? lastSeq + 1 : first;
        // a smaller window than the log was kept with: drop what is beyond it now
        while (first != null && first <= lastSeq - window) {
            log.delete(txn, first);
            first = log.firstKey(txn);
            oldestSeq = first;
        }
        started = true;
    }

    /** At {@link Db#close}, on the wake thread after every wake before: wakes every subscriber and watch with {@link DbException.Closed}. */
    void close() {
        DbException.Closed closed = state.closedError();
        next.fail(closed);
        prefixes.close(closed);
        List<Watch<K, V>> all = new ArrayList<>();
        synchronized (watches) {
            for (List<Watch<K, V>> list : watches.values()) all.addAll(list);
        }
        for (Watch<K, V> w : all) w.future.completeExceptionally(closed);
    }

    @Override
    public String toString() {
        return "ChangeFeed(" + table.name() + ", last " + lastSeq + ", window " + window + ")";
    }

    /** A pending watch: the key, the sequence number its subscriber's snapshot had seen, the future. */
    private static final class Watch<K, V> {
        final K key;
        final long seen;
        final CompletableFuture<ChangeSet<K, V>> future;
        ChangeSet<K, V> set;

        Watch(K key, long seen, CompletableFuture<ChangeSet<K, V>> future) {
            this.key = key;
            this.seen = seen;
            this.future = future;
        }

        Watch<K, V> firing(ChangeSet<K, V> set) {
            this.set = set;
            return this;
        }
    }

    /**
     * A change set as the log stores it, under its sequence number: when its commit began and its
     * changes, with the bytes the table got.
     */
    record Logged<K, V>(long committedAt, List<Recorded<K, V>> changes) {
        ChangeSet<K, V> changeSet(long seq) {
            List<ChangeSet.Change<K, V>> decoded = new ArrayList<>(changes.size());
            for (Recorded<K, V> r : changes) decoded.add(r.change());
            return new ChangeSet<>(seq, committedAt, decoded);
        }
    }

    /**
     * The log's encoding of a {@link Logged} set: committedAt (8 bytes), the number of changes (4), then
     * per change the key's length (4) and bytes, the value's length (4; -1 for a delete, -2 for a
     * delete of an expired row) and bytes:
     * the bytes the table got, so writing a set calls no codec and cannot fail on a value the caller
     * changed after {@code put}. Reading decodes them with the table's codecs.
     */
    static final class LogCodec<K, V> implements Codec<Logged<K, V>> {
        /** The value lengths that mark a delete, and a delete of an expired row. */
        private static final int DELETED = -1;
        private static final int EXPIRED = -2;
        private final Codec<K> keys;
        private final Codec<V> values;

        LogCodec(Codec<K> keys, Codec<V> values) {
            this.keys = keys;
            this.values = values;
        }

        @Override
        public int size(Logged<K, V> set) {
            int size = Long.BYTES + Integer.BYTES;
            for (Recorded<K, V> c : set.changes()) {
                size += 2 * Integer.BYTES + c.key().length + (c.value() == null ? 0 : c.value().length);
            }
            return size;
        }

        @Override
        public void write(Logged<K, V> set, ByteBuffer out) {
            out.putLong(set.committedAt()).putInt(set.changes().size());
            for (Recorded<K, V> c : set.changes()) {
                out.putInt(c.key().length).put(c.key());
                if (c.value() == null) {
                    out.putInt(c.change().expired() ? EXPIRED : DELETED);
                } else {
                    out.putInt(c.value().length).put(c.value());
                }
            }
        }

        @Override
        public Logged<K, V> read(ByteBuffer in) {
            long committedAt = in.getLong();
            int n = in.getInt();
            List<Recorded<K, V>> changes = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                byte[] key = bytes(in, in.getInt());
                int valueSize = in.getInt();
                byte[] value = valueSize < 0 ? null : bytes(in, valueSize);
                changes.add(new Recorded<>(key, value, new ChangeSet.Change<>(keys.read(wrap(key, in)),
                    value == null ? null : values.read(wrap(value, in)), valueSize == EXPIRED)));
            }
            return new Logged<>(committedAt, changes);
        }

        private static byte[] bytes(ByteBuffer in, int length) {
            byte[] b = new byte[length];
            in.get(b);
            return b;
        }

        private static ByteBuffer wrap(byte[] bytes, ByteBuffer like) {
            return ByteBuffer.wrap(bytes).order(like.order());
        }
    }
}

package kiln.db;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The single writer thread: takes every queued write, runs each in a nested transaction of one
 * parent transaction, commits the parent once (one fsync for the batch), then completes the
 * futures. Writes that arrive during a commit wait in the queue and form the next batch. With a
 * {@link Deadline}, the writes past it fail: those still queued withdrawn (not applied), those of the
 * batch being run with their outcome unknown ({@link #expire}).
 */
final class Writer implements Runnable, Deadline.Watched {
    private static final Logger LOG = Logger.getLogger(Writer.class.getName());

    /** One queued write and, once run, its outcome. */
    private static final class Pending<R> implements QueryFuture.Withdrawal {
        private static final VarHandle STATE;
        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(Pending.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
        private static final int QUEUED = 0;
        private static final int TAKEN = 1;
        private static final int WITHDRAWN = 2;

        final Query<R> query;
        /** Runs in a write transaction of its own, not nested in a batch (see {@link #submitAlone}). */
        final boolean alone;
        final QueryFuture<R> future = new QueryFuture<>(this);
        /** When it was asked for ({@link Deadline#stamp}), or 0 without a deadline. */
        final long asked;
        /** {@link #QUEUED} until the writer takes it into a batch or its waiter (or the deadline) withdraws it. */
        private volatile int state;
        R result;
        Throwable error;
        /** The query's puts and deletes on tables with a change feed ({@link Txn#changes}), or null. */
        List<Object> changes;

        Pending(Query<R> query, boolean alone, long asked) {
            this.query = query;
            this.alone = alone;
            this.asked = asked;
        }

        @Override
        public boolean withdraw() {
            return STATE.compareAndSet(this, QUEUED, WITHDRAWN);
        }

        /** @return true when the writer may run it: it was not withdrawn, and now cannot be */
        boolean take() {
            return STATE.compareAndSet(this, QUEUED, TAKEN);
        }

        boolean isTaken() {
            return state == TAKEN;
        }

        void run(Txn txn) throws Exception {
            result = query.run(txn);
            changes = txn.changes();
        }

        void complete() {
            if (error == null) future.succeed(result);
            else future.fail(error);
        }
    }

    private final DbState state;
    /** Called on the writer thread when it has had no work for a while (the feeds' renewal: {@link Feeds#idle}). */
    private final Runnable idle;
    private final KvEngine engine;
    private final int maxBatch;
    private final ArrayBlockingQueue<Pending<?>> queue;
    private final Thread thread;
    private volatile boolean stopping;
    /** Null when the database has no deadline. */
    private final Deadline deadline;
    /** With a deadline: the writes of the batch being run, in the order they were asked for, for {@link #expire}; else null. */
    private volatile Pending<?>[] running;
    private static final Pending<?>[] NONE = new Pending<?>[0];

    private volatile long commits;
    private volatile long writes;
    private volatile long failedWrites;
    private volatile long largestBatch;
    /** Runs of a batch (or of a write alone) that conflicted with another process's writes and were run again or failed. */
    private volatile long conflicts;
    /** Commits by batch size: [0] one write, [i] 2^(i-1)+1..2^i writes; see {@link DbStats#commitsByBatchSize}. */
    private final AtomicLongArray commitsByBatchSize = new AtomicLongArray(DbStats.BATCH_SIZE_BUCKETS);
    /** Writes in committed batches, rolled-back ones included: the sum of the batch sizes. */
    private volatile long batchedWrites;
    /** System.nanoTime() when the batch being run began, or 0 while the writer waits for work; see {@link #busyNanos}. */
    private volatile long batchStarted;
    /** Numbers each run of a batch, so change feeds number their sets afresh in a re-run. */
    private long batchRuns;
    /** Whether the batch {@link #runBatch} runs has committed: from then on nothing may fail or re-run its writes. */
    private boolean batchCommitted;

    /** For tests only ({@link Db.Builder}): runs on this thread after a commit with change sets, before they are published. */
    private final Runnable betweenCommitAndPublish;
    /**
     * Writer thread only: feeds whose publish after a commit failed (reading the sets other servers
     * logged before it, over a shared engine, failed). Their sets are in the log; each idle turn of the
     * writer, and each later publish to them, catches them up from it until it succeeds.
     */
    private final Set<ChangeFeed<?, ?>> behind = new LinkedHashSet<>();

    /**
     * @param idle     run on this thread when it has had no work for 50 ms
     * @param deadline the database's, or null for none; it watches this writer once started
     */
    Writer(DbState state, Runnable idle, KvEngine engine, int maxBatch, int queueCapacity, Runnable betweenCommitAndPublish,
           Deadline deadline) {
        this.state = state;
        this.idle = idle;
        this.deadline = deadline;
        this.betweenCommitAndPublish = betweenCommitAndPublish;
        this.engine = engine;
        this.maxBatch = maxBatch;
        this.queue = new ArrayBlockingQueue<>(queueCapacity);
        this.thread = new Thread(this, "kiln-db-writer");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** True only on the writer thread, and only while it runs a write query. */
    private boolean runningQuery;

    /**
     * @return whether the caller is a write query (its transaction is open on this thread). Future
     *         callbacks that run on the writer thread after the commit are not: they may read and
     *         submit writes.
     */
    boolean isRunningQuery() {
        return Thread.currentThread() == thread && runningQuery;
    }

    boolean isWriterThread() {
        return Thread.currentThread() == thread;
    }

    /** @return true while the writer thread runs (it ends only after {@link #shutdownAndDrain}, or if it dies) */
    boolean isAlive() {
        return thread.isAlive();
    }

    /** @return how long the writer has been running its current batch, ns; 0 while it waits for work */
    long busyNanos(long now) {
        long started = batchStarted;
        return started == 0 ? 0 : Math.max(1, now - started);
    }

    /**
     * {@link Db#write}: queues {@code query}, or fails its future at once inside a write query (joining
     * it would deadlock the writer on itself), after the database's close, or once it is fatal.
     */
    <R> QueryFuture<R> write(Query<R> query) {
        if (isRunningQuery()) {
            return QueryFuture.failed(new IllegalStateException(
                "db.write() inside a write query: do the work in the transaction you were given"));
        }
        if (state.isClosed()) return QueryFuture.failed(state.closedError());
        DbException.Fatal f = state.fatal();
        if (f != null) return QueryFuture.failed(f);
        return submit(query);
    }

    <R> QueryFuture<R> submit(Query<R> query) {
        return enqueue(new Pending<>(query, false, deadline == null ? 0 : Deadline.stamp()));
    }

    /**
     * Queues {@code query} to run in a top-level write transaction of its own between two batches,
     * for what cannot run nested in a batch (opening a table: LMDB's {@code mdb_dbi_open} with
     * {@code MDB_CREATE}). It commits on this thread like every other write, so a read begun after
     * it sees it.
     */
    <R> QueryFuture<R> submitAlone(Query<R> query) {
        return enqueue(new Pending<>(query, true, deadline == null ? 0 : Deadline.stamp()));
    }

    private <R> QueryFuture<R> enqueue(Pending<R> p) {
        if (!queue.offer(p)) {
            p.future.fail(new DbException.Overloaded(
                "write queue full (" + queue.size() + " writes waiting for the disk); retry later"));
        } else if (stopping && queue.remove(p)) {
            // close() raced with this submit and the writer may already have drained: refuse it
            p.future.fail(state.closedError());
        }
        return p.future;
    }

    DbStats stats(KvStats kv) {
        long[] byBatchSize = new long[commitsByBatchSize.length()];
        for (int i = 0; i < byBatchSize.length; i++) byBatchSize[i] = commitsByBatchSize.get(i);
        return new DbStats(commits, writes, failedWrites, largestBatch, kv.mapSize(), queue.size(),
            byBatchSize, batchedWrites, kv.usedBytes(), kv.readTxnsInUse(), kv.readTxnsPooled(), kv.readSlots(),
            conflicts);
    }

    /** Refuses new writes, commits everything queued, and waits for the thread to end. */
    void shutdownAndDrain() {
        stopping = true;
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void run() {
        List<Pending<?>> batch = new ArrayList<>(Math.min(maxBatch, 4096));
        while (true) {
            try {
                Pending<?> first = queue.poll(50, TimeUnit.MILLISECONDS);
                if (first == null) {
                    if (stopping && queue.isEmpty()) return;
                    if (!behind.isEmpty()) catchUpBehind();
                    idle.run();
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, maxBatch - 1);
                long now = deadline == null ? 0 : System.nanoTime();
                batch.removeIf(p -> !begin(p, now));
                if (batch.isEmpty()) continue;
                if (deadline != null) running = batch.toArray(NONE);
                batchStarted = System.nanoTime() | 1;  // never 0, which means idle
                int from = 0;
                for (int i = 0; i < batch.size(); i++) {
                    if (!batch.get(i).alone) continue;
                    if (i > from) commit(batch.subList(from, i));
                    commitAlone(batch.get(i));
                    from = i + 1;
                }
                if (from < batch.size()) commit(batch.subList(from, batch.size()));
            } catch (InterruptedException e) {
                if (stopping) return;
            } catch (Throwable t) {
                LOG.log(Level.SEVERE, "writer thread: unexpected error; failing the batch", t);
                for (Pending<?> p : batch) {
                    if (!p.future.isDone()) p.future.fail(t);
                }
            } finally {
                if (deadline != null) running = null;
                batchStarted = 0;
                batch.clear();
            }
        }
    }

    /**
     * Takes {@code p} into the batch being formed, unless it was withdrawn by a refused join() (its
     * future failed then) or its deadline passed while it waited: then it is withdrawn now, never
     * begun, and fails saying it is not applied.
     *
     * @return whether to run it
     */
    private boolean begin(Pending<?> p, long now) {
        if (deadline != null && deadline.passed(p.asked, now) && p.withdraw()) {
            p.future.fail(deadline.notApplied());
            return false;
        }
        return p.take();
    }

    /**
     * On the deadline thread: fails the writes past the deadline. Those of the batch being run have
     * begun and may still commit: their outcome is unknown (if they commit, they are counted and
     * published as usual; completing their futures then does nothing). Those still queued, oldest
     * first, are withdrawn: they never run, and are not applied.
     */
    @Override
    public void expire(long now) {
        Pending<?>[] begun = running;
        if (begun != null) {
            for (Pending<?> p : begun) {
                if (!deadline.passed(p.asked, now)) break;
                if (!p.future.isDone()) p.future.fail(deadline.outcomeUnknown());
            }
        }
        for (Pending<?> p; (p = queue.peek()) != null && deadline.passed(p.asked, now); ) {
            if (p.withdraw()) p.future.fail(deadline.notApplied());
            // taken: the writer drained it meanwhile (the batch above, next tick); else withdrawn, now or
            // by a refused join(): its place in the queue is free again (unless the writer drained it just now)
            if (!p.isTaken()) queue.remove(p);
        }
    }

    /**
     * @return true when the database is fatal: then {@code batch} failed with its error at once, since
     *         the engine would refuse it (or, after an I/O error, could report lost data as durable)
     */
    private boolean failedFatal(List<Pending<?>> batch) {
        DbException.Fatal fatal = state.fatal();
        if (fatal == null) return false;
        for (Pending<?> p : batch) p.future.fail(fatal);
        return true;
    }

    /**
     * How many times a batch that conflicts with other processes' writes ({@link KvTxn.Conflict}) is
     * run before its writes fail with {@link DbException.Overloaded}.
     */
    static final int MAX_CONFLICTS = 20;

    /**
     * Before the {@code attempt}th run of a batch that conflicted: a random wait up to 1 ms doubled
     * per conflict, at most 100 ms, so that two servers that conflicted do not meet again at once.
     *
     * @return false when the writer is stopping (no more waits then: the batch fails)
     */
    private boolean backOff(int attempt) {
        long most = Math.min(100_000_000L, 1_000_000L << Math.min(attempt, 20));
        java.util.concurrent.locks.LockSupport.parkNanos(java.util.concurrent.ThreadLocalRandom.current().nextLong(most / 2, most));
        return !Thread.currentThread().isInterrupted();
    }

    private static DbException contended(int attempts, KvTxn.Conflict last) {
        DbException e = new DbException.Overloaded("the write conflicted with other servers' writes " + attempts
            + " times in a row (the same rows written from several servers at once); retry shortly");
        e.initCause(last);
        return e;
    }

    /** Commits one batch, running it again when it conflicts and splitting it when it is too large for the engine. */
    private void commit(List<Pending<?>> batch) {
        for (int attempt = 1; ; attempt++) {
            if (failedFatal(batch)) return;
            try {
                runBatch(batch);
                return;
            } catch (KvTxn.Conflict c) {
                conflicts++;
                if (attempt == MAX_CONFLICTS || !backOff(attempt)) {
                    DbException failure = contended(attempt, c);
                    for (Pending<?> p : batch) p.future.fail(failure);
                    return;
                }
            } catch (KvTxn.TooLarge r) {
                splitOrFail(batch, r);
                return;
            } catch (DbException.Unavailable e) {
                for (Pending<?> p : batch) p.future.fail(e);
                return;
            } catch (RuntimeException e) {
                if (batchCommitted) {
                    // thrown after the commit (closing its transaction, say): the writes are in, and are answered so
                    LOG.log(Level.SEVERE, "after the commit of " + batch.size() + " writes", e);
                    for (Pending<?> p : batch) p.complete();
                    return;
                }
                DbException failure = state.fatalIf(e);
                if (failure == null && batch.size() > 1) {
                    // Most likely one write's fault that reached the whole transaction (a statement
                    // PostgreSQL refused aborts it, and every later one is refused): nothing was
                    // committed, so each write is committed alone and only the culprit fails.
                    LOG.warning("commit of " + batch.size() + " writes failed (" + e.getMessage() + "); committing them one at a time");
                    for (Pending<?> p : batch) commit(List.of(p));
                    return;
                }
                if (failure == null) {
                    failure = new DbException.CommitFailed("commit of " + batch.size() + " writes failed: " + e.getMessage(), e);
                    LOG.log(Level.SEVERE, failure.getMessage(), e);
                }
                for (Pending<?> p : batch) p.future.fail(failure);
                return;
            }
        }
    }

    /** A batch did not fit: its writes are committed one at a time; a single write that does not fit fails. */
    private void splitOrFail(List<Pending<?>> batch, KvTxn.TooLarge r) {
        if (batch.size() > 1) {
            for (Pending<?> p : batch) commit(List.of(p));
            return;
        }
        Pending<?> p = batch.get(0);
        p.error = r.full ? new DbException.DatabaseFull("database full: " + r.getMessage())
            : new DbException("write too large for one transaction: " + r.getMessage(), r);
        failedWrites++;
        writes++;
        p.complete();
    }

    /** Runs one {@link #submitAlone} query in its own write transaction and commits it, again when it conflicts. */
    private void commitAlone(Pending<?> p) {
        for (int attempt = 1; ; attempt++) {
            if (failedFatal(List.of(p))) return;
            p.error = null;
            try (KvTxn txn = engine.beginWrite()) {
                p.run(new Txn(txn));
                txn.commit();  // not counted in commits: those are the write queries' (DbStats)
            } catch (KvTxn.Conflict c) {
                conflicts++;
                if (attempt < MAX_CONFLICTS && backOff(attempt)) continue;
                p.error = contended(attempt, c);
            } catch (Exception e) {
                DbException fatal = e instanceof RuntimeException r ? state.fatalIf(r) : null;
                p.error = fatal != null ? fatal : e;
            }
            p.complete();
            return;
        }
    }

    /** @throws KvTxn.TooLarge when the batch does not fit in one transaction or in the engine */
    private void runBatch(List<Pending<?>> batch) {
        int failed = 0;
        List<Staged<?, ?>> staged = null;
        long run = ++batchRuns;
        batchCommitted = false;
        try (KvTxn parent = engine.beginWrite()) {
            for (Pending<?> p : batch) {
                p.result = null;
                p.error = null;
                p.changes = null;
                try (KvTxn child = parent.nested()) {
                    try {
                        runningQuery = true;
                        try {
                            p.run(new Txn(child));
                        } finally {
                            runningQuery = false;
                        }
                        child.commit();
                    } catch (KvTxn.TooLarge | KvTxn.Conflict | DbException.Unavailable e) {
                        throw e;  // the whole batch's: too large, run again, or the engine is out of reach
                    } catch (Exception | StackOverflowError e) {
                        if (e instanceof RuntimeException r && state.isFatal(r)) throw r;  // the engine's fault, not the query's
                        p.error = e;
                        p.changes = null;  // rolled back with its nested transaction
                        failed++;
                    }
                }
            }
            staged = stageChanges(batch, run, new Txn(parent));
            parent.commit();
            batchCommitted = true;
        }
        commits++;
        writes += batch.size();
        failedWrites += failed;
        if (batch.size() > largestBatch) largestBatch = batch.size();
        commitsByBatchSize.incrementAndGet(DbStats.batchSizeBucket(batch.size()));
        batchedWrites += batch.size();
        if (staged != null) {
            // A crash here (the hook stands for one in a test) loses no set, the log has them, and announces none.
            if (betweenCommitAndPublish != null) betweenCommitAndPublish.run();
            publish(staged);  // before the writes' futures: a writer that awaited its write finds it in the feed
        }
        for (Pending<?> p : batch) p.complete();
    }

    /** A write query's changes to one table with a change feed, numbered and logged, to publish once durable. */
    private record Staged<K, V>(ChangeFeed<K, V> feed, ChangeSet<K, V> set) {
        /** Publishes the set with the time its commit became durable. */
        void publish(long durableAt) {
            feed.publish(new ChangeSet<>(set.seq(), durableAt, set.changes()));
        }
    }

    /**
     * Inside the batch's transaction, before its commit: appends each write query's changes to the
     * logs of the change feeds of the tables it changed (one {@link ChangeSet} per query and table).
     *
     * @return the sets, to publish once the commit is durable; null when no query changed a table with a feed
     */
    private static List<Staged<?, ?>> stageChanges(List<Pending<?>> batch, long run, Txn parent) {
        List<Staged<?, ?>> staged = null;
        long committedAt = Clock.micros();
        for (Pending<?> p : batch) {
            if (p.error != null || p.changes == null) continue;
            if (staged == null) staged = new ArrayList<>();
            List<Object> c = p.changes;
            // usually one fed table per query; grouped by feed in the order each was first changed
            List<ChangeFeed<?, ?>> feeds = new ArrayList<>(1);
            for (int i = 0; i < c.size(); i += 2) {
                if (!feeds.contains(c.get(i))) feeds.add((ChangeFeed<?, ?>) c.get(i));
            }
            for (ChangeFeed<?, ?> f : feeds) staged.add(stage(f, c, run, parent, committedAt));
        }
        return staged;
    }

    @SuppressWarnings("unchecked")
    private static <K, V> Staged<K, V> stage(ChangeFeed<K, V> feed, List<Object> changes, long run, Txn parent, long committedAt) {
        List<Recorded<K, V>> mine = new ArrayList<>();
        for (int i = 0; i < changes.size(); i += 2) {
            if (changes.get(i) == feed) mine.add((Recorded<K, V>) changes.get(i + 1));
        }
        return new Staged<>(feed, feed.stage(run, parent, mine, committedAt));
    }

    /**
     * After the commit is durable: publishes every set, then wakes each feed's subscribers and watches
     * once. Nothing here may fail the batch's writes, which are committed: a feed whose publish fails
     * is left {@link #behind}, to catch up from its log, and the failure is logged.
     */
    private void publish(List<Staged<?, ?>> staged) {
        if (!behind.isEmpty()) catchUpBehind();  // from their logs, this commit's sets included
        long durableAt = Clock.micros();
        for (Staged<?, ?> s : staged) {
            if (!behind.isEmpty() && behind.contains(s.feed())) continue;  // still behind: its set waits in the log
            try {
                s.publish(durableAt);
            } catch (RuntimeException e) {
                behind.add(s.feed());
                LOG.log(Level.WARNING, "committed, but publishing change set " + s.set().seq() + " of the feed of '"
                    + s.feed().table().name() + "' failed; its subscribers get it from the log once the log can be read", e);
            }
        }
        for (Staged<?, ?> s : staged) s.feed().wake();  // once per feed: a woken feed has nothing left to wake
    }

    /** Catches the feeds {@link #behind} up from their logs; a feed whose log cannot be read yet stays behind. */
    private void catchUpBehind() {
        for (var i = behind.iterator(); i.hasNext(); ) {
            ChangeFeed<?, ?> feed = i.next();
            try {
                feed.catchUp();
                i.remove();
                LOG.info("the feed of '" + feed.table().name() + "' caught up from its log");
            } catch (RuntimeException e) {
                // still out of reach: the next idle turn or publish tries again
            }
        }
    }
}

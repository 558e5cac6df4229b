package kiln.db;

import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * How read queries run: inline on the caller in a read transaction of the engine (LMDB), or, on an
 * engine whose reads block on the network ({@link KvEngine#readThreads}), on the read threads of a
 * {@link GroupReader}. It also guards the engine's close: reads, backups and verifies hold the lock
 * shared, {@link #closeEngine} exclusively, so that an engine never closes under a transaction.
 */
final class Reads {
    private final KvEngine engine;
    private final DbState state;
    /** Whether the calling thread is the writer's, running a write query ({@link Writer#isRunningQuery}): no read may start there. */
    private final BooleanSupplier inWriteQuery;
    /** The read threads of an engine whose reads block; null: reads run inline. */
    private final GroupReader groupReader;
    private final ReentrantReadWriteLock closeLock = new ReentrantReadWriteLock();

    /**
     * @param inWriteQuery whether the calling thread runs a write query (a read there is refused)
     * @param deadline     fails reads not answered in time on the read threads; null for none
     */
    Reads(KvEngine engine, DbState state, BooleanSupplier inWriteQuery, Deadline deadline) {
        this.engine = engine;
        this.state = state;
        this.inWriteQuery = inWriteQuery;
        int threads = engine.readThreads();
        this.groupReader = threads > 0 ? new GroupReader(state, engine, closeLock.readLock(), threads, deadline) : null;
    }

    /** @return the read threads, or null when reads run inline */
    GroupReader groupReader() {
        return groupReader;
    }

    /** {@link Db#read}. */
    <R> QueryFuture<R> read(Query<R> query) {
        QueryFuture<R> f = new QueryFuture<>();
        if (groupReader == null) {
            try {
                f.succeed(now(query));
            } catch (Throwable t) {
                f.fail(t);
            }
        } else if (inWriteQuery.getAsBoolean()) {
            f.fail(insideWrite());
        } else if (state.isClosed()) {
            f.fail(state.closedError());
        } else {
            groupReader.submit(query, f);
        }
        return f;
    }

    /**
     * Runs a read query on the calling thread on every engine, for the layers' own rare reads that
     * cannot wait asynchronously (a change feed reading sets older than it keeps in memory): on
     * PostgreSQL it holds the caller for one round trip.
     *
     * @throws RuntimeException the query's failure (a checked one wrapped)
     */
    <R> R inline(Query<R> query) {
        try {
            return now(query);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new CompletionException(e);
        }
    }

    /** Runs {@code query} in a read transaction on the calling thread. */
    <R> R now(Query<R> query) throws Exception {
        if (inWriteQuery.getAsBoolean()) throw insideWrite();
        ReentrantReadWriteLock.ReadLock lock = closeLock.readLock();
        lock.lock();
        try {
            state.checkOpen();
            try (KvTxn t = engine.beginRead()) {
                return query.run(new Txn(t));
            }
        } catch (RuntimeException e) {
            throw state.fatalOr(e);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs {@code body} with the engine open: not closed under it, and the database neither closed
     * nor fatal when it begins.
     *
     * @throws DbException.Closed or {@link DbException.Fatal} as {@link DbState#checkOpen}
     */
    <T> T whileOpen(Supplier<T> body) {
        ReentrantReadWriteLock.ReadLock lock = closeLock.readLock();
        lock.lock();
        try {
            state.checkOpen();
            return body.get();
        } finally {
            lock.unlock();
        }
    }

    /** Stops the read threads: the reads still queued fail with {@link DbException.Closed}. */
    void stop() {
        if (groupReader != null) groupReader.stop();
    }

    /** Closes the engine once no read, backup or verify has it open. */
    void closeEngine() {
        closeLock.writeLock().lock();
        try {
            engine.close();
        } finally {
            closeLock.writeLock().unlock();
        }
    }

    private static IllegalStateException insideWrite() {
        return new IllegalStateException("db.read() inside a write query: use the write transaction you were given");
    }
}

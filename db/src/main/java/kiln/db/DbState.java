package kiln.db;

import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Whether the database may be used: open, closed ({@link Db#close}), or fatal (its engine failed in
 * a way after which it must not be used: {@link KvEngine#fatalCause}). Shared by the rooms that run
 * queries — the writer, the reads, the read threads — so that none of them reaches back to
 * {@link Db} to ask.
 */
final class DbState {
    private final String location;
    private final KvEngine engine;
    private final Consumer<DbException.Fatal> onFatal;
    private volatile boolean closed;
    /** Set once, by the first fatal error; see {@link #fatalIf}. */
    private volatile DbException.Fatal fatal;

    /**
     * @param onFatal told once, on a thread of its own, of the first fatal error; may be null
     */
    DbState(KvEngine engine, Consumer<DbException.Fatal> onFatal) {
        this.location = engine.location();
        this.engine = engine;
        this.onFatal = onFatal;
    }

    /** @return where the data is ({@link KvEngine#location}), for messages */
    String location() {
        return location;
    }

    /** @return the error a query meets after {@link #close} */
    DbException.Closed closedError() {
        return new DbException.Closed("database " + location + " is closed");
    }

    boolean isClosed() {
        return closed;
    }

    /** @return true for the call that closed it, false when it was closed already */
    synchronized boolean close() {
        if (closed) return false;
        closed = true;
        return true;
    }

    /** @throws DbException.Closed after {@link #close}; the fatal error once there is one */
    void checkOpen() {
        if (closed) throw closedError();
        DbException.Fatal f = fatal;
        if (f != null) throw f;
    }

    /** @return the error that made the engine unusable, or null while it is usable */
    DbException.Fatal fatal() {
        return fatal;
    }

    /** @return whether {@code e} means the engine must not be used again ({@link KvEngine#fatalCause}) */
    boolean isFatal(RuntimeException e) {
        return e instanceof DbException.Fatal || engine.fatalCause(e) != null;
    }

    /** @return the error that makes {@code e}'s engine unusable ({@link #fatalIf}), or {@code e} itself */
    RuntimeException fatalOr(RuntimeException e) {
        DbException.Fatal f = fatalIf(e);
        return f != null ? f : e;
    }

    /**
     * Makes the database fatal when {@code e} is an error after which the engine must not be used
     * again ({@link KvEngine#fatalCause}); the first such error wins, is logged, and the listener
     * hears of it once, on a thread of its own.
     *
     * @return the fatal error to fail with, or null when {@code e} is not fatal
     */
    DbException.Fatal fatalIf(RuntimeException e) {
        if (e instanceof DbException.Fatal f) return f;
        String cause = engine.fatalCause(e);
        if (cause == null) return null;
        DbException.Fatal first;
        synchronized (this) {
            if (fatal == null) {
                fatal = new DbException.Fatal("database " + location + " is unusable: " + cause
                    + "; restart the process (the engine reopens from the last commit that reached the disk)", e);
                Logger.getLogger(DbState.class.getName()).log(Level.SEVERE, fatal.getMessage(), e);
                if (onFatal != null) {
                    DbException.Fatal told = fatal;
                    Thread t = new Thread(() -> onFatal.accept(told), "kiln-db-fatal");
                    t.setDaemon(true);
                    t.start();
                }
            }
            first = fatal;
        }
        return first;
    }
}

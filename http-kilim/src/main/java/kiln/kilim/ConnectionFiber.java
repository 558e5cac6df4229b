package kiln.kilim;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.logging.Level;
import java.util.logging.Logger;

import kilim.Pausable;
import kilim.PauseReason;
import kilim.Task;
import kiln.http.spi.Connection;

/**
 * The fiber that serves one connection while it has work: the loop of kiln's connection state
 * machine ({@link Connection}), pausing where a thread would block. When an idle connection's socket
 * becomes readable, the {@link Poller} runs one at once, on its own thread ({@link Serving}); it
 * reads, serves, and when there is nothing more to read gives the connection's buffers back, hands
 * the connection to the poller and ends: an idle keep-alive connection has no fiber at all. A fiber
 * that served its connection without pausing is run again for the next connection the poller
 * reports, so a request served at once makes no fiber and leaves nothing behind for the collector
 * but its request and response. A streamed body that waits between parts has none either
 * ({@link Parked}). Waits in the middle of the work (a handler awaiting the database, a write to a
 * client that does not read) pause the fiber, not the carrier thread.
 */
final class ConnectionFiber extends Task<Object> implements PauseReason, Carriers.Homed, Poller.Ready {
    private static final Logger LOG = Logger.getLogger(ConnectionFiber.class.getName());

    private final Router router;
    private final Carriers carriers;
    /** The poller whose selector polls this connection's socket; the fiber runs on its carrier. */
    private final Poller poller;
    /** The connection's key and the connection: this fiber's until it ends, then the next one's when it is reused ({@link Serving}). */
    private Object key;
    private Connection connection;
    /** True while this fiber is paused until its socket is ready ({@link #pauseUntil}). */
    private volatile boolean awaiting;
    /** Set by the poller when the socket this paused fiber waits for is ready. */
    private volatile boolean ready;
    /**
     * Set by the poller when it reported the socket readable while this fiber served the
     * connection without waiting for that: the client sent more, and the next read reads it
     * even when the last one had emptied the socket ({@link #drained}).
     */
    private volatile boolean readable;
    /**
     * True when the last read left the socket empty, as a read that returned less than it had room
     * for did: a read right away would almost always find nothing, so there is none (one system call
     * less per request; nginx's recv does the same) unless the selector has reported it readable
     * since ({@link #readable}). The connection goes back to the selector, which reports the next
     * request, and the fiber ends. It does not wait a few turns of the run queue for that request, as
     * it once did: a client across a network never answers so fast, and on a loaded host neither
     * does one on the same machine, so each turn was a read that found nothing.
     */
    private boolean drained;
    /** What waits for the connection's streamed body while no fiber runs, once this fiber has parked it. */
    private Parked parked;

    /**
     * @param waiting the {@link Parked} stream that woke this fiber, or null: it goes on with it, so
     *                a readable socket it was told of is read (a new one would wait for the report again)
     */
    ConnectionFiber(Router router, Carriers carriers, Poller poller, Object key, Connection connection, Poller.Ready waiting) {
        this.router = router;
        this.carriers = carriers;
        this.poller = poller;
        this.key = key;
        this.connection = connection;
        this.parked = waiting instanceof Parked p ? p : null;
        setScheduler(carriers);
    }

    /**
     * A poller's way to serve its connections ({@link Poller.Serve}): it runs a fiber for a connection
     * the moment the selector reports it, on the poller's own thread, and keeps that fiber for the
     * next connection when it ended without ever pausing. Such a fiber is referred to by nothing
     * else then (a pause is what hands a fiber to a future, a timer or a selection key), and its
     * Kilim state is as new: its stack of frames is empty and its timer was never set. A fiber
     * that paused ends as garbage, as every fiber did before. Also makes the fibers that go on
     * with a woken stream, from any thread.
     */
    static final class Serving implements Poller.Serve {
        private final Router router;
        private final Carriers carriers;
        /** A fiber that ended without pausing, to run for the next connection; the poller's thread only. */
        private ConnectionFiber spare;

        Serving(Router router, Carriers carriers) {
            this.router = router;
            this.carriers = carriers;
        }

        @Override
        public boolean now(Poller poller, Object key, Connection c) {
            ConnectionFiber f = spare;
            if (f == null) {
                f = new ConnectionFiber(router, carriers, poller, key, c, null);
            } else {
                spare = null;
                f.reuse(key, c);
            }
            if (!f.runHere()) return false;  // handed off: the fiber still runs on this thread, and nothing here is this thread's
            if (f.endedWithoutPause()) spare = f;
            return true;
        }

        @Override
        public void start(Poller poller, Object key, Connection c, Poller.Ready waiting) {
            new ConnectionFiber(router, carriers, poller, key, c, waiting).start();
        }
    }

    /** Makes this fiber, which {@link #endedWithoutPause}, new for connection {@code c}. */
    private void reuse(Object key, Connection c) {
        this.key = key;
        this.connection = c;
        awaiting = false;
        ready = false;
        readable = false;
        drained = false;
        parked = null;
        done = false;
    }

    /** @return whether this fiber's work is done and it never paused (nor failed): nothing refers to it any more */
    private boolean endedWithoutPause() {
        return done && pauseReason == null;
    }

    @Override
    public int home() {
        return poller.index();
    }

    /**
     * Runs this fiber now, on the calling thread, which must own its poller's carrier: the
     * poller's, the moment its select reported the connection. The key's interest stays
     * {@code OP_READ} while the fiber serves (no {@code epoll_ctl} to hand the connection back), and
     * its attachment is this fiber, which a report meanwhile reaches ({@link #ready}).
     *
     * @return false when this fiber held the thread so long that the carrier was handed to a new
     *         thread meanwhile ({@link Carriers#runNow}): the poller must leave its loop at once
     */
    boolean runHere() {
        poller.attach(key, this);
        running.set(true);  // as Kilim's Task.resume does before it queues a fiber
        return carriers.runNow(poller.index(), this);
    }

    /** @return the handler now running, e.g. {@code GET /todos/{id}}, or the route whose stream is sent, for a report; null between requests */
    String handlerName() {
        return connection.handlerName();
    }

    @Override
    public void execute() throws Pausable {
        Connection c = connection;
        boolean handedBack = false;
        try {
            while (!handedBack) {
                switch (c.next()) {
                    case READ -> handedBack = read();
                    case WRITE -> write();
                    case HANDLE -> c.respond(router.dispatch(c.request()));
                    case WAIT -> handedBack = waitForStream();
                    case SHUTDOWN_OUTPUT -> {
                        c.socket().shutdownOutput();  // a failure: the client reset the connection, which closes
                        c.outputShutDown();
                    }
                    case CLOSE -> {
                        return;
                    }
                }
            }
        } catch (IOException e) {
            LOG.log(Level.FINE, "connection error", e);
        } finally {
            if (!handedBack) poller.close(key, c);
        }
    }

    /** @return true when the connection went back to the poller to wait for its next bytes */
    private boolean read() throws Pausable, IOException {
        connection.prepareRead();  // arms the idle or header deadline
        int n = drained && !reported() ? 0 : readMore();
        if (n != 0) {
            connection.read(n);
            return false;
        }
        connection.releaseIfIdle();
        if (!poller.await(key, Poller.READ, connection)) throw new IOException("server stopping");
        return true;
    }

    /** @return whether the poller reported the socket readable since the last look ({@link #readable}), which it forgets */
    private boolean reported() {
        if (!readable) return false;
        readable = false;
        return true;
    }

    /** Reads what is there into the connection's read buffer and notes whether that emptied the socket ({@link #drained}). */
    private int readMore() throws IOException {
        ByteBuffer in = connection.readBuffer();
        int room = in.remaining();
        int n = poller.read(key, in);
        drained = n < room;
        return n;
    }

    /** Writes the output, pausing the fiber while the socket's send buffer is full; a failure is the connection's to count. */
    private void write() throws Pausable {
        connection.beginWrite();  // arms the write deadline
        ByteBuffer bytes = connection.output();
        try {
            while (bytes.hasRemaining()) {
                if (poller.write(key, bytes) == 0) pauseUntil(Poller.WRITE);
            }
            connection.written();
        } catch (IOException e) {
            connection.writeFailed(e);
        }
    }

    /**
     * A streamed body waits: its connection parks without a fiber, its socket watched for the
     * client's side becoming readable (a client that left is noticed at once, not at the next
     * heartbeat's failed write).
     *
     * @return true when parked: end this fiber; false to go on at once
     */
    private boolean waitForStream() throws IOException {
        drained = false;  // the client may send more while the body streams
        if (parked == null) parked = new Parked(poller, key, connection);
        if (parked.readable) {
            parked.readable = false;
            connection.prepareRead();
            connection.read(poller.read(key, connection.readBuffer()));
            connection.releaseIfIdle();  // nothing was there after all: a waiting stream holds no buffer
            return false;
        }
        if (!poller.await(key, Poller.READ, parked)) throw new IOException("server stopping");
        if (!connection.park(parked)) return false;
        if (parked.readable) connection.wake();  // reported by a poller on a handed-off carrier before the park: its wake found none
        return true;
    }

    /**
     * A streamed body between two parts, waiting without a fiber: what a server-sent event
     * subscriber is while nothing happens. Its connection's wake-up ({@link Connection#park}) starts
     * a new fiber that goes on with it; the selector reporting the socket readable (the client's
     * side closed, most likely) does too, after noting it.
     */
    private static final class Parked implements Runnable, Poller.Ready {
        private final Poller poller;
        private final Object key;
        private final Connection connection;
        volatile boolean readable;

        Parked(Poller poller, Object key, Connection connection) {
            this.poller = poller;
            this.key = key;
            this.connection = connection;
        }

        /** The wake-up: a new fiber goes on with the connection, and with this. */
        @Override
        public void run() {
            poller.serve(key, connection, this);
        }

        @Override
        public void ready() {
            readable = true;
            connection.wake();
        }
    }

    /** Pauses this fiber until the poller reports the socket ready for {@code op}. */
    private void pauseUntil(int op) throws Pausable, IOException {
        ready = false;
        awaiting = true;
        if (!poller.await(key, op, this)) throw new IOException("server stopping");
        Task.pause(this);
    }

    /**
     * Called by the poller, which cleared the key's interest: the socket is ready. A fiber paused
     * for it resumes; one that was serving (a handler awaiting the database, say) when the client
     * sent more notes it for its next read.
     */
    @Override
    public void ready() {
        if (awaiting) {
            awaiting = false;
            ready = true;
            resume();
        } else {
            readable = true;
        }
    }

    /** The fiber stays paused until {@link #ready()}; Kilim checks this when the pause completes, so an early wake is not lost. */
    @Override
    public boolean isValid(Task task) {
        return !ready;
    }
}

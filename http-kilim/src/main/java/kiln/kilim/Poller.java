package kiln.kilim;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.spi.ClientSocket;
import kiln.http.spi.Connection;
import kiln.server.Connections;

/**
 * One selector of the Kilim server, and the carrier of {@link Carriers} whose thread runs it: one
 * per carrier ({@code kiln-selector} for carrier 0, {@code kiln-carrier-N} for the others), each
 * polling its own share of the connections, as each of nginx's workers polls its own. When an idle
 * connection's socket becomes readable it serves it with a fiber ({@link ConnectionFiber}) that it
 * runs at once, on its own thread, and that reads what arrived: not queued, because what a request
 * waiting in the run queue holds (its bytes, its fiber) would live through a young collection, and
 * at 19,500 connections that was a full collection every few young ones. Between two selects it
 * runs the fibers queued to it, those resumed after a pause (and carrier 0 fires the timers that
 * are due), so a request never leaves this thread. A fiber that finds nothing more to
 * read hands its connection back here and ends, so an idle keep-alive connection is only its
 * socket, its selection key and a {@link Connection} without buffers (nginx keeps idle connections
 * the same way): no fiber, no paused frames, no buffers.
 *
 * <p>Carrier 0's poller owns the one listening socket: it accepts, and deals the new connections to
 * the pollers in turn (itself included), each of which registers its own with its selector. One
 * listener rather than one {@code SO_REUSEPORT} listener per poller: the kernel would spread
 * connections by a hash (unevenly at a few connections), and a second server started on the same
 * port by mistake would silently share it instead of failing with "Address already in use".
 *
 * <p>New connections are accepted after the ready connections of the same select are handled, so
 * that connections their clients closed are counted out before the cap is checked.
 *
 * <p>A fiber that must wait in the middle of its work (a client that does not read its response
 * fast enough, a lingering close) instead pauses, attached to the key, and is resumed here.
 *
 * <p>The key's attachment says which: a {@link Connection} to serve, or what waits or serves
 * ({@link Ready}: the {@link ConnectionFiber} serving the connection or paused on its socket, a
 * streamed body parked without one). The key's interest in {@code OP_READ} stays while the
 * connection is idle and while the fiber the poller ran for it serves, so that a request served at
 * once costs no {@code epoll_ctl}. For a {@code Ready} the selector thread clears the interest when
 * it reports it (epoll reports a readable socket at every select until it is read), so it is
 * reported once per wait; the fiber sets it again with {@link #await}.
 *
 * <p>Two transports poll the same way: {@link NioPoller}, the JDK's {@code Selector} and
 * {@code SocketChannel} calls, and {@link EpollPoller}, Netty's epoll calls on bare descriptors
 * ({@link NativeSocket}), without the JDK's per-call locks, its selector's map from descriptor to
 * key and its channel's objects. Each accepts its own way ({@link #acceptOne}) and deals the
 * connections the same way ({@link #deal}). A connection's key is the transport's own (a {@code SelectionKey}, an
 * {@code EpollPoller.Key}), opaque to the fibers, which hand it back to the poller.
 */
abstract class Poller implements Runnable {
    private static final Logger LOG = Logger.getLogger(Poller.class.getName());
    /** Connections accepted per readiness report of the listening socket, so that ready connections are served between batches. */
    private static final int ACCEPT_BATCH = 256;
    /** After a failed accept (typically EMFILE under a connection flood), accepting pauses this long. */
    private static final long ACCEPT_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** Size of a poller's direct I/O buffer: a request head or a response; larger writes go through the JDK's own. */
    private static final int IO_BUFFER_BYTES = 16 * 1024;

    /** What a connection's fiber awaits ({@link #await}): its socket readable, or writable. */
    static final int READ = SelectionKey.OP_READ;
    static final int WRITE = SelectionKey.OP_WRITE;

    private final Serve serve;
    final Connections connections;
    final Carriers carriers;
    /** This poller's carrier. */
    final int index;
    /** Carrier 0's: the listening socket; null on the others. */
    final ServerSocketChannel listener;
    /** Carrier 0's: every poller, to deal accepted connections to. */
    private Poller[] pollers = {this};
    /** Accepted connections dealt so far, whose count picks the next one's poller. */
    private int dealt;
    /** Connections carrier 0's poller accepted for this one, to register with its selector. */
    private final ConcurrentLinkedQueue<Connection> adopted = new ConcurrentLinkedQueue<>();
    /**
     * The socket I/O buffer of the thread that owns this carrier: the fibers of this carrier read
     * and write through it ({@link #read}, {@link #write}). Direct, because the
     * kernel copies only from and to native memory: given a heap buffer, the JDK copies through a
     * temporary direct buffer that it looks up in a thread-local cache on every call. Each thread
     * that takes the carrier over ({@link #run}) makes its own, so that a fiber still finishing on
     * a handed-off thread never shares one.
     */
    private volatile ByteBuffer scratch;
    volatile boolean running = true;
    /** System.nanoTime() when accepting resumes after a failed accept; 0 while accepting. */
    private long acceptPausedUntil;

    /**
     * @param serve    starts a fiber for a connection that has work
     * @param index    the carrier this poller runs on
     * @param listener for carrier 0: a bound, non-blocking listening socket, closed when the poller
     *                 stops; null for the others
     */
    Poller(Serve serve, Connections connections, Carriers carriers, int index, ServerSocketChannel listener) {
        this.serve = serve;
        this.connections = connections;
        this.carriers = carriers;
        this.index = index;
        this.listener = listener;
    }

    /** Registers this poller as carrier {@code index}'s loop, with {@code wakeup} to end its blocking poll; from the constructor. */
    final void becomeLoop(Runnable wakeup) {
        String name = index == 0 ? "kiln-selector" : "kiln-carrier-" + index;
        carriers.selectorLoop(index, name, this, wakeup);  // started with the carriers
    }

    /** Serves a connection that has work with a fiber ({@link ConnectionFiber}) on this poller's carrier. */
    interface Serve {
        /**
         * Runs a fiber for an idle connection whose socket the selector reported readable, now, on
         * the calling thread, the poller's; it becomes the key's attachment, reads what arrived (or
         * the end of the stream) and serves it.
         *
         * @return false when the carrier was handed to a new thread while the fiber held this one:
         *         the poller must leave its loop at once
         */
        boolean now(Poller poller, Object key, Connection c);

        /**
         * Queues a fiber on the poller's carrier, from any thread.
         *
         * @param waiting what waited for the connection's streamed body and woke (it carries what
         *                the selector reported to the fiber)
         */
        void start(Poller poller, Object key, Connection c, Ready waiting);
    }

    /** What waits on a socket with this poller: resumed (or woken) when the socket is ready. */
    interface Ready {
        /** Called on the poller's thread when the socket is ready for what was awaited. */
        void ready();
    }

    /** For carrier 0's poller, before the carriers start: deal accepted connections to {@code all} in turn. */
    void dealTo(Poller[] all) {
        pollers = all;
    }

    /** @return the carrier this poller runs on: its connections' fibers run there too */
    int index() {
        return index;
    }

    /** Makes {@code attachment} what {@code key} starts or resumes when its socket is ready, leaving its interest as it is. */
    abstract void attach(Object key, Object attachment);

    /**
     * Sets {@code key}'s interest to {@code op} ({@link #READ} or {@link #WRITE}) with
     * {@code attachment} to start or resume when it is ready. From any thread; the caller must not
     * touch the connection afterwards unless it is the paused fiber that the attachment names.
     *
     * @return false when the key is cancelled (the server is stopping): close the connection
     */
    abstract boolean await(Object key, int op, Object attachment);

    /**
     * Makes the poller's thread return from its poll (when it blocks there or is about to) to look
     * at what changed since. At most one wakeup is in flight.
     */
    final void wakeup() {
        if (carriers.claimSelectorWakeup(index)) wakeupPoll();
    }

    /** Ends the poller thread's blocking poll, or its next one. */
    abstract void wakeupPoll();

    /**
     * Reads from {@code key}'s socket into {@code dst}, from a fiber of this carrier: through this
     * poller's direct buffer when the caller is the carrier's thread (a fiber still running on a
     * thread that was handed off is not: {@link #readElsewhere}).
     *
     * @return the bytes read, 0 when none are ready (or {@code dst} has no room), -1 at end of stream
     * @throws IOException as {@link SocketChannel#read(ByteBuffer)}
     */
    final int read(Object key, ByteBuffer dst) throws IOException {
        if (!dst.hasRemaining()) return 0;  // as the JDK's channel: a read of no bytes (Netty's would say end of stream)
        ByteBuffer d = scratch;  // read before the owner: a new owner replaces it after it took the carrier
        if (!onOwnThread()) return readElsewhere(key, dst);
        d.clear();
        if (dst.remaining() < d.capacity()) d.limit(dst.remaining());
        int n = readDirect(key, d);
        if (n > 0) dst.put(d.flip());
        return n;
    }

    /**
     * Writes from {@code src} to {@code key}'s socket, from a fiber of this carrier: through this
     * poller's direct buffer when the caller is the carrier's thread and {@code src} fits in it, else
     * {@link #writeElsewhere}.
     *
     * @return the bytes written (0 when the socket's send buffer is full)
     * @throws IOException as {@link SocketChannel#write(ByteBuffer)}
     */
    final int write(Object key, ByteBuffer src) throws IOException {
        ByteBuffer d = scratch;  // as in read
        if (src.remaining() > d.capacity() || !onOwnThread()) return writeElsewhere(key, src);
        int start = src.position();
        d.clear().put(src).flip();
        int n = writeDirect(key, d);
        src.position(start + n);
        return n;
    }

    /** @return the direct I/O buffer of this poller's thread; only for that thread, between two of its own calls */
    final ByteBuffer scratch() {
        return scratch;
    }

    /** Reads into the direct buffer {@code d}, as {@link SocketChannel#read(ByteBuffer)} does; on the poller's thread. */
    abstract int readDirect(Object key, ByteBuffer d) throws IOException;

    /** Writes from the direct buffer {@code d}, as {@link SocketChannel#write(ByteBuffer)} does; on the poller's thread. */
    abstract int writeDirect(Object key, ByteBuffer d) throws IOException;

    /** {@link #read} from a thread that no longer owns the carrier, into any buffer. */
    abstract int readElsewhere(Object key, ByteBuffer dst) throws IOException;

    /** {@link #write} of more than the direct buffer holds, or from a thread that no longer owns the carrier. */
    abstract int writeElsewhere(Object key, ByteBuffer src) throws IOException;

    final boolean onOwnThread() {
        return carriers.thread(index) == Thread.currentThread();
    }

    /** Stops the thread, then closes the listening socket and the idle connections; waits up to 1 s. */
    void stop() {
        running = false;
        wakeupPoll();
        try {
            carriers.thread(index).join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The selector's loop, on the thread that owns this poller's carrier. When a fiber held this thread so long
     * that the carrier was handed to a new thread ({@link Carriers#handOff}), the new thread runs
     * this loop from its start and the old one leaves it, touching nothing.
     */
    @Override
    public final void run() {
        boolean handedOff = false;
        scratch = ByteBuffer.allocateDirect(IO_BUFFER_BYTES);  // this thread's: see the field
        loopStarts();
        try {
            while (running) {
                if (carriers.runQueued(index) < 0) {
                    handedOff = true;
                    return;
                }
                if (index == 0) carriers.fireTimers();
                runTasks();
                long sleepMs = carriers.prepareToSleep(index);
                if (!adopted.isEmpty()) sleepMs = 0;  // dealt before the sleep was announced: no wakeup is on its way
                if (acceptPausedUntil != 0 && sleepMs != 0) {
                    long acceptMs = Math.max(1, (acceptPausedUntil - System.nanoTime()) / 1_000_000);
                    sleepMs = sleepMs < 0 ? acceptMs : Math.min(sleepMs, acceptMs);
                }
                for (Connection c; (c = adopted.poll()) != null;) register(c);
                int polled = poll(sleepMs);
                if (polled < 0) {
                    handedOff = true;  // the new owner polls again: the sockets not yet served are reported anew
                    return;
                }
                if (polled == LISTENER_READY) acceptAll();
                if (acceptPausedUntil != 0 && System.nanoTime() - acceptPausedUntil >= 0) {
                    acceptPausedUntil = 0;
                    acceptInterest(true);
                }
            }
        } catch (IOException | ClosedSelectorException | CancelledKeyException e) {
            if (running) LOG.log(Level.SEVERE, "the selector failed; no longer serving", e);
        } finally {
            if (!handedOff) closeAll();
        }
    }

    /** What {@link #poll} returns when the listening socket was among the sockets reported. */
    static final int LISTENER_READY = 1;

    /**
     * Waits for sockets to be ready (not at all when {@code sleepMs} is 0, until woken when it is
     * -1, else up to that long), tells the carriers it is awake ({@link Carriers#awake}), and
     * serves each socket reported ({@link #ready}).
     *
     * @return {@link #LISTENER_READY} when the listening socket has connections to accept, 0 when
     *         not, -1 when the carrier was handed off while a fiber ran here: leave the loop at once
     */
    abstract int poll(long sleepMs) throws IOException;

    /**
     * A thread begins this poller's loop (the first, or one that took the carrier over): makes what
     * must be its own, as {@link #scratch} is, since the thread it replaced may still be in its {@link #poll}.
     */
    void loopStarts() {
    }

    /** Runs what other threads left for this poller's thread to do; the epoll transport's. */
    void runTasks() {
    }

    /** @return whether the poll may still block: no work came since {@link Carriers#prepareToSleep} said it could (and this asks it again) */
    final boolean mayBlock() {
        return running && adopted.isEmpty() && carriers.prepareToSleep(index) != 0;
    }

    /**
     * A connection's socket is ready: serve a connection without a fiber, or tell what waits on it.
     *
     * @return false when the carrier was handed off while a fiber ran here: leave the loop at once
     */
    final boolean ready(Object key, Object attachment) {
        if (attachment instanceof Connection c) return serve.now(this, key, c);  // its interest stays READ
        if (!clearInterest(key)) return true;  // closed by its fiber since the poll
        ((Ready) attachment).ready();
        return true;
    }

    /**
     * Stops {@code key} being reported until its interest is set again ({@link #await}).
     *
     * @return false when it is cancelled
     */
    abstract boolean clearInterest(Object key);

    /** Queues a fiber that goes on with a connection whose streamed body {@code waiting} woke, from any thread. */
    void serve(Object key, Connection c, Ready waiting) {
        serve.start(this, key, c, waiting);
    }

    /** Closes a connection, from any thread, once nothing else will touch it (its fiber's last act). */
    abstract void close(Object key, Connection c);

    /** Closes the connection's socket and counts it out. */
    final void closeSocket(Connection c) {
        Connections.closeQuietly(c.socket());
        connections.closed(c);
    }

    /** Turns the listening socket's interest in connections to accept on or off. */
    abstract void acceptInterest(boolean on);

    private void acceptAll() {
        for (int i = 0; i < ACCEPT_BATCH; i++) {
            try {
                if (!acceptOne()) return;
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                // Typically EMFILE ("Too many open files") under a connection flood: keep the server
                // alive (acceptFailed logs at most once a second) and let the backlog wait a little.
                connections.acceptFailed(e);
                acceptInterest(false);
                acceptPausedUntil = System.nanoTime() + ACCEPT_BACKOFF_NANOS;
                return;
            }
        }
    }

    /**
     * Accepts one connection from the listening socket, if one waits: makes it non-blocking with
     * {@code TCP_NODELAY}, admits it ({@link Connections#admit}: a refused one is answered 503 and
     * closed) and {@link #deal}s it; a socket that fails on the way is closed.
     *
     * @return false when none was waiting
     * @throws IOException when the accept itself failed (EMFILE, say): accepting pauses a little
     */
    abstract boolean acceptOne() throws IOException;

    /** An admitted connection from {@code client}: made a {@link Connection}, counted open and dealt to the pollers in turn. */
    final void deal(ClientSocket socket, InetSocketAddress client) {
        Connection c = new Connection(connections, socket, client);
        connections.opened(c);
        Poller to = pollers[Math.floorMod(dealt++, pollers.length)];
        if (to == this) {
            register(c);
        } else {
            to.adopt(c);
        }
    }

    /** From carrier 0's poller: a connection for this poller to register and serve. */
    private void adopt(Connection c) {
        adopted.add(c);
        wakeup();
    }

    /** Starts polling a new connection for its first request, attached to it with interest {@link #READ}; on this poller's thread. */
    abstract void register(Connection c);

    /** At the end: closes the listening socket, every connection waiting here with no fiber, and the selector. */
    private void closeAll() {
        try {
            if (listener != null) listener.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "closing the listening socket", e);
        }
        for (Connection c; (c = adopted.poll()) != null;) closeSocket(c);
        try {
            // idle here; a connection whose fiber runs is closed by that fiber, when its next wait finds the key cancelled
            closeIdleAndPoll();
        } catch (IOException | ClosedSelectorException e) {
            LOG.log(Level.FINE, "closing the selector", e);
        }
    }

    /** Closes the connections idle here (interest {@link #READ}, attached to their {@link Connection}), then the poll's own resources. */
    abstract void closeIdleAndPoll() throws IOException;
}

package kiln.kilim;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

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
 */
final class Poller implements Runnable {
    private static final Logger LOG = Logger.getLogger(Poller.class.getName());
    /** Connections accepted per readiness report of the listening socket, so that ready connections are served between batches. */
    private static final int ACCEPT_BATCH = 256;
    /** After a failed accept (typically EMFILE under a connection flood), accepting pauses this long. */
    private static final long ACCEPT_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** Size of a poller's direct I/O buffer: a request head or a response; larger writes go through the JDK's own. */
    private static final int IO_BUFFER_BYTES = 16 * 1024;

    private final Serve serve;
    private final Connections connections;
    private final Carriers carriers;
    /** This poller's carrier. */
    private final int index;
    private final Selector selector;
    /** Carrier 0's: the listening socket; null on the others. */
    private final ServerSocketChannel listener;
    private final SelectionKey acceptKey;
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
    private volatile boolean running = true;
    /** System.nanoTime() when accepting resumes after a failed accept; 0 while accepting. */
    private long acceptPausedUntil;

    /**
     * @param serve    starts a fiber for a connection that has work
     * @param index    the carrier this poller runs on
     * @param listener for carrier 0: a bound, non-blocking listening socket, closed when the poller
     *                 stops; null for the others
     * @throws IOException when the selector cannot be opened
     */
    Poller(Serve serve, Connections connections, Carriers carriers, int index, ServerSocketChannel listener) throws IOException {
        this.serve = serve;
        this.connections = connections;
        this.carriers = carriers;
        this.index = index;
        this.listener = listener;
        this.selector = Selector.open();
        this.acceptKey = listener == null ? null : listener.register(selector, SelectionKey.OP_ACCEPT);
        String name = index == 0 ? "kiln-selector" : "kiln-carrier-" + index;
        carriers.selectorLoop(index, name, this, selector::wakeup);  // started with the carriers
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
        boolean now(Poller poller, SelectionKey key, Connection c);

        /**
         * Queues a fiber on the poller's carrier, from any thread.
         *
         * @param waiting what waited for the connection's streamed body and woke (it carries what
         *                the selector reported to the fiber)
         */
        void start(Poller poller, SelectionKey key, Connection c, Ready waiting);
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

    /**
     * Sets {@code key}'s interest to {@code op} ({@link SelectionKey#OP_READ} or
     * {@link SelectionKey#OP_WRITE}) with {@code attachment} to start or resume when it is ready.
     * From any thread; the caller must not touch the connection afterwards unless it is the paused
     * fiber that the attachment names.
     *
     * @return false when the key is cancelled (the server is stopping): close the connection
     */
    boolean await(SelectionKey key, int op, Object attachment) {
        key.attach(attachment);
        try {
            key.interestOps(op);
        } catch (CancelledKeyException e) {
            return false;
        }
        wakeup();
        return true;
    }

    /**
     * Makes the selector thread look at the interest changes and closed channels since its last
     * select: a channel registered with a selector is only really closed when the selector next
     * deregisters it. At most one wakeup is in flight.
     */
    void wakeup() {
        if (carriers.claimSelectorWakeup(index)) selector.wakeup();
    }

    /**
     * {@code ch.read(dst)} from a fiber of this carrier: through this poller's direct buffer when
     * the caller is the carrier's thread (a fiber still running on a thread that was handed off is
     * not, and reads as usual).
     *
     * @return the bytes read, 0 when none are ready, -1 at end of stream
     * @throws IOException as {@link SocketChannel#read(ByteBuffer)}
     */
    int read(SocketChannel ch, ByteBuffer dst) throws IOException {
        ByteBuffer d = scratch;  // read before the owner: a new owner replaces it after it took the carrier
        if (!onOwnThread()) return ch.read(dst);
        d.clear();
        if (dst.remaining() < d.capacity()) d.limit(dst.remaining());
        int n = ch.read(d);
        if (n > 0) dst.put(d.flip());
        return n;
    }

    /**
     * {@code ch.write(src)} from a fiber of this carrier: through this poller's direct buffer when
     * the caller is the carrier's thread and {@code src} fits in it.
     *
     * @return the bytes written (0 when the socket's send buffer is full)
     * @throws IOException as {@link SocketChannel#write(ByteBuffer)}
     */
    int write(SocketChannel ch, ByteBuffer src) throws IOException {
        ByteBuffer d = scratch;  // as in read
        if (src.remaining() > d.capacity() || !onOwnThread()) return ch.write(src);
        int start = src.position();
        d.clear().put(src).flip();
        int n = ch.write(d);
        src.position(start + n);
        return n;
    }

    private boolean onOwnThread() {
        return carriers.thread(index) == Thread.currentThread();
    }

    /** Stops the thread, then closes the listening socket and the idle connections; waits up to 1 s. */
    void stop() {
        running = false;
        selector.wakeup();
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
    public void run() {
        boolean handedOff = false;
        scratch = ByteBuffer.allocateDirect(IO_BUFFER_BYTES);  // this thread's: see the field
        Reported reported = new Reported();  // this thread's too
        try {
            while (running) {
                if (carriers.runQueued(index) < 0) {
                    handedOff = true;
                    return;
                }
                if (index == 0) carriers.fireTimers();
                long sleepMs = carriers.prepareToSleep(index);
                if (!adopted.isEmpty()) sleepMs = 0;  // dealt before the sleep was announced: no wakeup is on its way
                if (acceptPausedUntil != 0 && sleepMs != 0) {
                    long acceptMs = Math.max(1, (acceptPausedUntil - System.nanoTime()) / 1_000_000);
                    sleepMs = sleepMs < 0 ? acceptMs : Math.min(sleepMs, acceptMs);
                }
                if (sleepMs == 0) {
                    selector.selectNow(reported);
                } else {
                    selector.select(reported, sleepMs < 0 ? 0 : sleepMs);  // a timeout of 0 blocks until woken
                }
                carriers.awake(index);
                for (Connection c; (c = adopted.poll()) != null;) register(c);
                boolean acceptable = false;
                for (int i = 0, n = reported.count; i < n; i++) {
                    SelectionKey key = reported.keys[i];
                    reported.keys[i] = null;
                    if (key == acceptKey) {
                        acceptable = true;
                    } else if (!ready(key)) {
                        handedOff = true;  // the new owner selects again: the keys not yet handled are reported anew
                        return;
                    }
                }
                reported.count = 0;
                if (acceptable) acceptAll();
                if (acceptPausedUntil != 0 && System.nanoTime() - acceptPausedUntil >= 0) {
                    acceptPausedUntil = 0;
                    if (acceptKey.isValid()) acceptKey.interestOps(SelectionKey.OP_ACCEPT);  // invalid once the server stops
                }
            }
        } catch (IOException | ClosedSelectorException | CancelledKeyException e) {
            if (running) LOG.log(Level.SEVERE, "the selector failed; no longer serving", e);
        } finally {
            if (!handedOff) closeAll();
        }
    }

    /**
     * A connection's socket is ready: serve a connection without a fiber, or tell what waits on it.
     *
     * @return false when the carrier was handed off while a fiber ran here: leave the loop at once
     */
    private boolean ready(SelectionKey key) {
        Object attachment = key.attachment();
        if (attachment instanceof Connection c) return serve.now(this, key, c);  // its interest stays OP_READ
        try {
            key.interestOps(0);
        } catch (CancelledKeyException e) {
            return true;  // closed by its fiber since the select
        }
        ((Ready) attachment).ready();
        return true;
    }

    /**
     * The keys one select reported, in the order reported, for the loop to go through once the
     * select returned (a fiber it runs may pause or block, which it must not do inside the select).
     * The selector's own selected-key set is not used: a {@code HashSet} to which each report adds a
     * node, hashed, and from which the loop removes it again.
     */
    private static final class Reported implements Consumer<SelectionKey> {
        /** Room for the most one select reports, the JDK's epoll selector's 1,024 events, without growing. */
        SelectionKey[] keys = new SelectionKey[1024];
        int count;

        @Override
        public void accept(SelectionKey key) {
            if (count == keys.length) keys = Arrays.copyOf(keys, 2 * count);
            keys[count++] = key;
        }
    }

    /** Queues a fiber that goes on with a connection whose streamed body {@code waiting} woke, from any thread. */
    void serve(SelectionKey key, Connection c, Ready waiting) {
        serve.start(this, key, c, waiting);
    }

    /** Closes a connection, from any thread, once nothing else will touch it (its fiber's last act). */
    void close(Connection c) {
        Connections.closeQuietly(c.channel());
        connections.closed(c);
        wakeup();  // the selector deregisters the key, which really closes the socket
    }

    private void acceptAll() {
        for (int i = 0; i < ACCEPT_BATCH; i++) {
            SocketChannel ch = null;
            try {
                ch = listener.accept();
                if (ch == null) return;
                ch.configureBlocking(false);
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                // Typically EMFILE ("Too many open files") under a connection flood: keep the server
                // alive (acceptFailed logs at most once a second) and let the backlog wait a little.
                connections.acceptFailed(e);
                Connections.closeQuietly(ch);
                if (ch == null) {
                    acceptKey.interestOps(0);
                    acceptPausedUntil = System.nanoTime() + ACCEPT_BACKOFF_NANOS;
                    return;
                }
                continue;
            }
            java.net.InetSocketAddress client = connections.admit(ch);
            if (client == null) continue;  // over a cap: answered 503 and closed
            Connection c = new Connection(connections, ch, client);
            connections.opened(c);
            Poller to = pollers[Math.floorMod(dealt++, pollers.length)];
            if (to == this) {
                register(c);
            } else {
                to.adopt(c);
            }
        }
    }

    /** From carrier 0's poller: a connection for this poller to register and serve. */
    private void adopt(Connection c) {
        adopted.add(c);
        wakeup();
    }

    /** Starts polling a new connection for its first request; on this poller's thread. */
    private void register(Connection c) {
        try {
            c.channel().register(selector, SelectionKey.OP_READ, c);
        } catch (ClosedChannelException e) {
            close(c);
        }
    }

    /** At the end: closes the listening socket, and every connection waiting here with no fiber. */
    private void closeAll() {
        try {
            if (listener != null) listener.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "closing the listening socket", e);
        }
        for (Connection c; (c = adopted.poll()) != null;) close(c);
        try {
            for (SelectionKey key : selector.keys()) {
                // idle here; a connection whose fiber runs is closed by that fiber, when its next wait finds the key cancelled
                if (key.isValid() && key.interestOps() == SelectionKey.OP_READ && key.attachment() instanceof Connection c) {
                    close(c);
                }
            }
            selector.close();
        } catch (IOException | ClosedSelectorException e) {
            LOG.log(Level.FINE, "closing the selector", e);
        }
    }
}

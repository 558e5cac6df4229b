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
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.Connection;
import kiln.server.Connections;

/**
 * The Kilim server's one selector thread ({@code kiln-selector}), which is also carrier 0 of
 * {@link Carriers}: it accepts connections, and when an idle connection's socket becomes readable
 * it reads what arrived and starts a fiber ({@link ConnectionFiber}) to serve it; a client that
 * closed is closed here, with no fiber. Between two selects it runs the fibers queued to it and
 * fires the timers that are due, so with one carrier a request never leaves this thread. A fiber
 * that finds nothing more to read hands its connection back here and ends, so an idle keep-alive
 * connection is only its socket, its selection key and a {@link Connection} without buffers (nginx
 * keeps idle connections the same way): no fiber, no paused frames, no buffers.
 *
 * <p>New connections are accepted after the ready connections of the same select are handled, so
 * that connections their clients closed are counted out before the cap is checked.
 *
 * <p>A fiber that must wait in the middle of its work (a client that does not read its response
 * fast enough, a lingering close) instead pauses, attached to the key, and is resumed here.
 *
 * <p>The key's attachment says which: a {@link Connection} to start a fiber for, or the paused
 * {@link ConnectionFiber} to resume. The selector thread clears the key's interest when it reports
 * it, so a socket is reported once per wait; the fiber sets it again with {@link #await}.
 */
final class Poller implements Runnable {
    private static final Logger LOG = Logger.getLogger(Poller.class.getName());
    /** Connections accepted per readiness report of the listening socket, so that ready connections are served between batches. */
    private static final int ACCEPT_BATCH = 256;
    /** After a failed accept (typically EMFILE under a connection flood), accepting pauses this long. */
    private static final long ACCEPT_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final KilimServer server;
    private final Connections connections;
    private final Carriers carriers;
    private final Selector selector;
    private final ServerSocketChannel listener;
    private final SelectionKey acceptKey;
    /** The selector thread's own read buffer: a connection waiting in a fiber's run queue holds only the bytes that arrived. */
    private final ByteBuffer scratch = ByteBuffer.allocate(2048);
    private volatile boolean running = true;
    /** System.nanoTime() when accepting resumes after a failed accept; 0 while accepting. */
    private long acceptPausedUntil;

    /**
     * @param listener a bound, non-blocking listening socket; closed when the poller stops
     * @throws IOException when the selector cannot be opened
     */
    Poller(KilimServer server, Connections connections, Carriers carriers, ServerSocketChannel listener) throws IOException {
        this.server = server;
        this.connections = connections;
        this.carriers = carriers;
        this.listener = listener;
        this.selector = Selector.open();
        this.acceptKey = listener.register(selector, SelectionKey.OP_ACCEPT);
        carriers.selectorLoop("kiln-selector", this, selector::wakeup);  // started with the carriers
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
        if (carriers.claimSelectorWakeup()) selector.wakeup();
    }

    /** Stops the thread, then closes the listening socket and the idle connections; waits up to 1 s. */
    void stop() {
        running = false;
        selector.wakeup();
        try {
            carriers.thread(0).join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The selector's loop, on the thread that owns carrier 0. When a fiber held this thread so long
     * that the carrier was handed to a new thread ({@link Carriers#handOff}), the new thread runs
     * this loop from its start and the old one leaves it, touching nothing.
     */
    @Override
    public void run() {
        boolean handedOff = false;
        try {
            while (running) {
                if (carriers.runQueued(0) < 0) {
                    handedOff = true;
                    return;
                }
                carriers.fireTimers();
                long sleepMs = carriers.prepareToSleep();
                if (acceptPausedUntil != 0 && sleepMs != 0) {
                    long acceptMs = Math.max(1, (acceptPausedUntil - System.nanoTime()) / 1_000_000);
                    sleepMs = sleepMs < 0 ? acceptMs : Math.min(sleepMs, acceptMs);
                }
                if (sleepMs == 0) {
                    selector.selectNow();
                } else {
                    selector.select(sleepMs < 0 ? 0 : sleepMs);  // select(0) blocks until woken
                }
                carriers.awake();
                boolean acceptable = false;
                Iterator<SelectionKey> it = selector.selectedKeys().iterator();
                while (it.hasNext()) {
                    SelectionKey key = it.next();
                    it.remove();
                    if (key == acceptKey) {
                        acceptable = true;
                    } else {
                        ready(key);
                    }
                }
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

    /** A connection's socket is ready: resume the fiber paused on it, or read for a connection without one. */
    private void ready(SelectionKey key) {
        Object attachment = key.attachment();
        try {
            key.interestOps(0);
        } catch (CancelledKeyException e) {
            return;  // closed by its fiber since the select
        }
        if (attachment instanceof ConnectionFiber paused) {
            paused.ready();
        } else {
            readable(key, (Connection) attachment);
        }
    }

    /**
     * Reads what arrived on a connection without a fiber: bytes start a fiber to serve them; the
     * end of the stream closes the connection here (unless a 408 is to be written first); nothing
     * at all waits again.
     */
    private void readable(SelectionKey key, Connection c) {
        int n;
        scratch.clear();
        try {
            n = c.channel().read(scratch);
        } catch (IOException e) {
            n = -1;  // reset by the client
        }
        if (n == 0) {
            key.interestOps(SelectionKey.OP_READ);
        } else if (n < 0 && !c.endOfStream()) {
            close(c);
        } else {
            byte[] arrived = n > 0 ? Arrays.copyOf(scratch.array(), n) : null;
            ConnectionFiber fiber = new ConnectionFiber(server, key, c, arrived);
            fiber.setScheduler(carriers);
            fiber.start();
        }
    }

    /** Closes a connection, from any thread, once nothing else will touch it. */
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
            if (!connections.admit(ch)) continue;  // over the cap: answered 503 and closed
            Connection c = new Connection(connections, ch);
            connections.opened(c);
            try {
                ch.register(selector, SelectionKey.OP_READ, c);
            } catch (ClosedChannelException e) {
                connections.closed(c);
            }
        }
    }

    /** At the end: closes the listening socket, and every connection waiting here with no fiber. */
    private void closeAll() {
        try {
            listener.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "closing the listening socket", e);
        }
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

package kiln.loom;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.spi.Connection;

/**
 * Watches the sockets of the connections whose streamed reply waits between two parts (a
 * server-sent-events subscriber between events), so that a client that leaves, or sends what a
 * stream's client has no reason to send, is noticed at once instead of at the next event or
 * heartbeat (15 s later), and its stream stops counting against {@code --max-streams} and
 * {@code --max-client-streams}: one platform thread, {@code kiln-stream-watch}, with one
 * {@link Selector} for the whole server, as Kilim's selector watches its parked streams
 * ({@code kiln.kilim.ConnectionFiber.Parked}).
 *
 * <p>It exists because a virtual thread parked on a stream's future reads nothing, and a second
 * virtual thread blocked in {@code read} beside each waiting stream, tried first, cost 2.2 KB of
 * heap per subscriber (its stack). Here a waiting stream costs its selection key and the
 * selector's entries for it (about 150 B), and its {@link Wait} (32 B), which replaces the
 * {@code CompletableFuture} the virtual thread used to park on; no thread, no buffer. Each wait
 * costs the selector one registration and one deregistration (two {@code epoll_ctl} calls on
 * Linux) and usually a selector wakeup; many waits begun together share one.
 *
 * <h2>One wait ({@link #await}, on the connection's virtual thread)</h2>
 * <ol>
 *   <li>The stream parks ({@link Connection#park}) with a {@link Wait} as its wake-up.</li>
 *   <li>The channel goes non-blocking and the Wait is queued; this thread registers it for
 *       {@link SelectionKey#OP_READ} (registering from the virtual thread would race with a select
 *       in progress).</li>
 *   <li>The virtual thread parks until the Wait runs, once ({@link Connection#park}): the body's
 *       future completed, its heartbeat is due, the server stops, or this thread saw the socket
 *       readable (it cancels the key and lets the selector drop it first, then calls
 *       {@link Connection#wake}).</li>
 *   <li>Woken, it cancels the key if this thread has not, reads once if the socket was reported
 *       readable (non-blocking: 0 when nothing is there after all), puts the channel back in
 *       blocking mode for its writes, and reports the read ({@link Connection#read}: -1 ends the
 *       stream as the client's; bytes wait in the connection's first KiB as a request pipelined
 *       after the stream, and a client that fills it ends the stream).</li>
 * </ol>
 * A channel whose key is cancelled may go back to blocking mode at once (the JDK refuses that only
 * while it has a valid key), but until the selector has dropped the key at its next select the
 * channel can be neither registered again ({@code CancelledKeyException}) nor really closed (the
 * close waits for the deregistration): this thread registers such a channel after a
 * {@code selectNow}, and {@link #closed} wakes it for a channel closed before.
 */
final class StreamWatch {
    private static final Logger LOG = Logger.getLogger(StreamWatch.class.getName());

    private final Selector selector;
    private final Thread thread;
    /** Waits to register, queued by the virtual threads; this thread registers them. */
    private final ConcurrentLinkedQueue<Wait> queued = new ConcurrentLinkedQueue<>();
    /** This thread's: waits whose channel still has the key of its wait before, registered after a selectNow. */
    private final List<Wait> deferred = new ArrayList<>();
    /** This thread's: waits whose socket was reported readable, woken once the selector dropped their keys. */
    private final List<Wait> readable = new ArrayList<>();
    private volatile boolean running = true;

    /**
     * Opens the selector and starts the thread.
     *
     * @throws IOException when the selector cannot be opened
     */
    StreamWatch() throws IOException {
        selector = Selector.open();
        thread = new Thread(this::run, "kiln-stream-watch");
        thread.setDaemon(true);  // the server's accept thread keeps the JVM alive, and its stop ends this one
        thread.start();
    }

    /**
     * For {@link Connection.Action#WAIT}, on the connection's virtual thread: parks it until its
     * stream may have work or its client sent something (or left), and reports that to the
     * connection. The channel is in blocking mode again on return; call {@link Connection#next}.
     *
     * @throws IOException when the channel fails (a reset while reading what the client sent)
     */
    void await(Connection c) throws IOException {
        Wait w = new Wait(c, Thread.currentThread());
        if (!c.park(w)) return;
        SocketChannel ch = c.channel();
        boolean watched = running && !w.woken;
        if (watched) {
            ch.configureBlocking(false);
            queued.add(w);
            selector.wakeup();
        }
        boolean interrupted = false;
        while (!w.woken) {
            LockSupport.park(this);
            interrupted |= Thread.interrupted();  // not a wake-up: kept for after the wait, as join() does
        }
        if (interrupted) Thread.currentThread().interrupt();
        if (!watched) return;
        boolean reported = w.release();
        int n = reported ? ch.read(c.readBuffer()) : 0;  // non-blocking: 0 when nothing is there
        ch.configureBlocking(true);
        if (reported) {
            c.read(n);
            c.releaseIfIdle();  // a waiting stream holds no buffer
        }
    }

    /**
     * The connection's loop closed {@code ch}: when the key of its last wait has not been dropped
     * yet, this thread drops it now, which really closes the socket (until then the client sees no
     * end of stream).
     */
    void closed(SocketChannel ch) {
        if (ch.isRegistered()) selector.wakeup();
    }

    /** Stops the thread and closes the selector, which drops every key left; waits up to 1 s. */
    void stop() {
        running = false;
        selector.wakeup();
        try {
            thread.join(1_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        try {
            while (running) {
                selector.select();
                register();
                report();
            }
        } catch (IOException | RuntimeException e) {
            if (running) LOG.log(Level.SEVERE, "the stream watch failed: waiting streams notice their clients only when they write", e);
        } finally {
            try {
                selector.close();
            } catch (IOException e) {
                LOG.log(Level.FINE, "closing the stream watch's selector", e);
            }
        }
    }

    /** Registers the queued waits; those whose channel still has its wait before's key after a selectNow, which drops it. */
    private void register() throws IOException {
        for (Wait w; (w = queued.poll()) != null;) {
            if (!w.register(selector)) deferred.add(w);
        }
        if (deferred.isEmpty()) return;
        selector.selectNow();  // their keys were cancelled before they were queued: this drops them
        for (Wait w : deferred) {
            if (!w.register(selector)) queued.add(w);  // not expected; the next turn tries again
        }
        deferred.clear();
        if (!queued.isEmpty()) selector.wakeup();
    }

    /** Wakes the connections whose socket is readable, once their keys are cancelled and dropped. */
    private void report() throws IOException {
        var ready = selector.selectedKeys();
        if (ready.isEmpty()) return;
        for (SelectionKey key : ready) {
            key.cancel();  // reported once: the virtual thread registers again for its next wait
            readable.add((Wait) key.attachment());
        }
        ready.clear();
        selector.selectNow();  // drops the keys just cancelled, so that a channel closed after its read really closes
        for (Wait w : readable) w.readable();
        readable.clear();
    }

    /**
     * One wait of a streamed body: the connection's wake-up ({@link Connection#park}) and its
     * selection key's attachment. The virtual thread and this thread hand the key over under its
     * monitor (never held across a park), so that a wait woken for another reason is not
     * registered, or has its key cancelled, and a report comes before or after the release.
     */
    private static final class Wait implements Runnable {
        private final Connection connection;
        private final Thread waiter;
        /** Set by the wake-up, from any thread; the virtual thread parks until it is. */
        volatile boolean woken;
        /** This thread's registration, or null. */
        private SelectionKey key;
        /** The virtual thread goes on: nothing more is registered or reported. */
        private boolean released;
        /** The socket was reported readable before the release. */
        private boolean readable;

        Wait(Connection connection, Thread waiter) {
            this.connection = connection;
            this.waiter = waiter;
        }

        /** The wake-up: runs once, from whichever thread sees work first. */
        @Override
        public void run() {
            woken = true;
            LockSupport.unpark(waiter);
        }

        /**
         * On the watch's thread: registers the channel unless the wait is over already.
         *
         * @return false when the channel still has the key of its wait before (cancelled, not dropped yet): try after a selectNow
         */
        boolean register(Selector selector) {
            boolean closed = false;
            synchronized (this) {
                if (released) return true;
                SocketChannel ch = connection.channel();
                if (ch.keyFor(selector) != null) return false;
                try {
                    key = ch.register(selector, SelectionKey.OP_READ, this);
                } catch (ClosedChannelException e) {
                    closed = true;  // its read fails, and the connection closes
                }
            }
            if (closed) readable();
            return true;
        }

        /** On the watch's thread: the socket is readable (its key cancelled and dropped); wakes the connection, unless it went on already. */
        void readable() {
            synchronized (this) {
                if (released) return;
                readable = true;
            }
            // Runs this wait's wake-up; if another waker ran it first and the virtual thread parked again
            // meanwhile, its next wait's: a spurious wake-up, after which it waits again.
            connection.wake();
        }

        /**
         * On the virtual thread, once woken: nothing more is registered or reported; cancels the
         * key, so that the channel may go back to blocking mode.
         *
         * @return true when the socket was reported readable: read it
         */
        boolean release() {
            SelectionKey k;
            boolean reported;
            synchronized (this) {
                released = true;
                k = key;
                reported = readable;
            }
            if (k != null) k.cancel();
            return reported;
        }
    }
}

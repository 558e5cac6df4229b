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
 * Watches the sockets of the connections whose streamed response waits between two parts (a
 * server-sent-events subscriber between events), so that a client that leaves, or sends what a
 * stream's client has no reason to send, is noticed at once instead of at the next event or
 * heartbeat (15 s later), and its stream stops counting against {@code --max-streams} and
 * {@code --max-client-streams}: one platform thread, {@code kiln-stream-selector}, with one
 * {@link Selector} for the whole server, as Kilim's selectors watch their parked streams
 * ({@code kiln.kilim.ConnectionFiber.Parked}).
 *
 * <p>It exists because a virtual thread parked on a stream's future reads nothing, and a second
 * virtual thread blocked in {@code read} beside each waiting stream, tried first, cost 2.2 KB of
 * heap per subscriber (its stack). Here a connection that streams holds one {@link Watched} (40 B;
 * its wake-up too, reused by every wait) and, while it is watched, a selection key (48 B) and the
 * selector's and the channel's entries for it (about 120 B): no thread, no buffer. Measured at
 * 1,000 and 5,000 subscribers: 118-124 B of heap per subscriber more than parking on a
 * {@code CompletableFuture} (whose waiter and wake-up, 88 B, are gone).
 *
 * <p>What a wait costs: nothing here. The socket is registered at the stream's first wait and
 * stays registered, in non-blocking mode, while the stream goes on, so a wait is a park and the
 * wake-up's unpark; the stream's parts are written without blocking, which on a socket with room
 * is the same one system call. Only a write that finds the socket full, or the stream's end
 * (the connection reads again), puts the channel back in blocking mode ({@link Watched#blocking}:
 * its key is cancelled), and its next wait registers it again (two {@code epoll_ctl} calls and a
 * selector wakeup). Registering at every wait instead cost 77 % more CPU per delivered event at
 * 2,000 subscribers (measured: 28.2 against 15.9 µs, with 1.1 {@code epoll_ctl} calls and 0.85
 * context switches per event).
 *
 * <h2>A connection's streamed waits ({@link Watched}, on its virtual thread)</h2>
 * <ol>
 *   <li>At a wait whose socket is not watched, the channel goes non-blocking and the connection is
 *       queued; this thread registers it for {@link SelectionKey#OP_READ} (registering from the
 *       virtual thread would race with a select in progress).</li>
 *   <li>The stream parks ({@link Connection#park}) with the {@link Watched} as its wake-up, and the
 *       virtual thread parks until it runs: the body's future completed, its heartbeat is due, the
 *       server stops, or this thread saw the socket readable (it cancels the key and lets the
 *       selector drop it, notes the report, then calls {@link Connection#wake}).</li>
 *   <li>A readable socket is read once (non-blocking: 0 when nothing is there after all) and the
 *       read reported ({@link Connection#read}): -1 ends the stream as the client's; bytes wait in
 *       the connection's first KiB as a request pipelined after the stream, and a client that fills
 *       it ends the stream. A report that came while the stream was writing is read at its next wait.</li>
 * </ol>
 * A channel whose key is cancelled may go back to blocking mode at once (the JDK refuses that only
 * while it has a valid key), but until the selector has dropped the key at its next select the
 * channel can be neither registered again ({@code CancelledKeyException}) nor really closed (the
 * close waits for the deregistration): this thread registers such a channel after a
 * {@code selectNow}, and {@link #closed} wakes it for a channel closed before.
 */
final class StreamSelector {
    private static final Logger LOG = Logger.getLogger(StreamSelector.class.getName());

    private final Selector selector;
    private final Thread thread;
    /** Connections to register, queued by their virtual threads; this thread registers them. */
    private final ConcurrentLinkedQueue<Watched> queued = new ConcurrentLinkedQueue<>();
    /** This thread's: connections whose channel still has a cancelled key, registered after a selectNow. */
    private final List<Watched> deferred = new ArrayList<>();
    /** This thread's: connections whose socket was reported readable, woken once the selector dropped their keys. */
    private final List<Watched> readable = new ArrayList<>();
    private volatile boolean running = true;

    /**
     * Opens the selector and starts the thread.
     *
     * @throws IOException when the selector cannot be opened
     */
    StreamSelector() throws IOException {
        selector = Selector.open();
        thread = new Thread(this::run, "kiln-stream-selector");
        thread.setDaemon(true);  // the server's accept thread keeps the JVM alive, and its stop ends this one
        thread.start();
    }

    /** @return the hold on this selector of {@code c}, whose virtual thread calls this at its first streamed wait and keeps it */
    Watched watch(Connection c) {
        return new Watched(c, Thread.currentThread());
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
            if (running) LOG.log(Level.SEVERE, "the stream selector failed: waiting streams notice their clients only when they write", e);
        } finally {
            try {
                selector.close();
            } catch (IOException e) {
                LOG.log(Level.FINE, "closing the stream selector's selector", e);
            }
        }
    }

    /** Registers the queued connections; those whose channel still has a cancelled key after a selectNow, which drops it. */
    private void register() throws IOException {
        for (Watched w; (w = queued.poll()) != null;) {
            if (!w.register()) deferred.add(w);
        }
        if (deferred.isEmpty()) return;
        selector.selectNow();  // their keys were cancelled before they were queued: this drops them
        for (Watched w : deferred) {
            if (!w.register()) queued.add(w);  // not expected; the next turn tries again
        }
        deferred.clear();
        if (!queued.isEmpty()) selector.wakeup();
    }

    /** Wakes the connections whose socket is readable, once their keys are cancelled and dropped. */
    private void report() throws IOException {
        var ready = selector.selectedKeys();
        if (ready.isEmpty()) return;
        for (SelectionKey key : ready) {
            key.cancel();  // reported once: the stream's next wait registers it again
            Watched w = (Watched) key.attachment();
            if (w.reported(key)) readable.add(w);
        }
        ready.clear();
        selector.selectNow();  // drops the keys just cancelled, so that a channel closed after its read really closes
        for (Watched w : readable) w.connection.wake();
        readable.clear();
    }

    /**
     * A connection's hold on the selector, from its first streamed wait to its close: its virtual
     * thread's wake-up ({@link Connection#park}), reused by every wait, and its selection key's
     * attachment. Its virtual thread calls {@link #await} for each wait and {@link #blocking}
     * before blocking I/O; the selector's thread and the virtual thread hand the key and the report
     * over under its monitor, never held across a park or I/O.
     */
    final class Watched implements Runnable {
        private final Connection connection;
        private final Thread waiter;
        /** Set by the wake-up, from any thread; the virtual thread parks until it is. */
        private volatile boolean woken;
        /** The virtual thread's: the channel is in non-blocking mode. */
        private boolean nonBlocking;
        /** The virtual thread's: the channel is queued or registered here (until a report or {@link #blocking}). */
        private boolean watching;
        /** The registration, or null: not yet registered, cancelled by a report, or given up. */
        private SelectionKey key;
        /** The virtual thread gave the registration up (blocking mode): the queued registration is not made. */
        private boolean withdrawn;
        /** The socket was reported readable: the virtual thread reads it at its wait. */
        private boolean readable;

        private Watched(Connection connection, Thread waiter) {
            this.connection = connection;
            this.waiter = waiter;
        }

        /**
         * For {@link Connection.Action#WAIT}: parks the virtual thread until its stream may have
         * work or its client sent something (or left), which is read and reported to the
         * connection; then call {@link Connection#next}. The channel stays non-blocking and watched.
         *
         * @throws IOException when the channel fails (a reset while reading what the client sent)
         */
        void await() throws IOException {
            if (takeReport()) return;
            if (!watching && running) {
                if (!nonBlocking) connection.channel().configureBlocking(false);
                nonBlocking = true;
                synchronized (this) {
                    withdrawn = false;
                }
                watching = true;
                queued.add(this);
                selector.wakeup();
            }
            woken = false;
            if (!connection.park(this)) return;
            if (hasReport()) connection.wake();  // reported before the park, its wake found none: runs this
            boolean interrupted = false;
            while (!woken) {
                LockSupport.park(this);
                interrupted |= Thread.interrupted();  // not a wake-up: kept for after the wait, as join() does
            }
            if (interrupted) Thread.currentThread().interrupt();
            takeReport();
        }

        /** Reads and reports what the socket was reported to hold. @return true when there was a report */
        private boolean takeReport() throws IOException {
            synchronized (this) {
                if (!readable) return false;
                readable = false;
            }
            watching = false;  // the report cancelled the key: the next wait registers again
            SocketChannel ch = connection.channel();
            connection.prepareRead();
            connection.read(ch.read(connection.readBuffer()));  // non-blocking: 0 when nothing is there
            connection.releaseIfIdle();  // a waiting stream holds no buffer
            return true;
        }

        private synchronized boolean hasReport() {
            return readable;
        }

        /**
         * Before a blocking read, and after a write that found the socket full: the channel goes
         * back to blocking mode, its key (if any) cancelled, until the next wait.
         */
        void blocking() throws IOException {
            if (!nonBlocking) return;
            SelectionKey k;
            synchronized (this) {
                withdrawn = true;
                readable = false;  // a blocking read sees it, or the next registration reports it again
                k = key;
                key = null;
            }
            if (k != null) k.cancel();
            watching = false;
            connection.channel().configureBlocking(true);
            nonBlocking = false;
        }

        /** The wake-up: runs once per wait, from whichever thread sees work first. */
        @Override
        public void run() {
            woken = true;
            LockSupport.unpark(waiter);
        }

        /**
         * On the selector's thread: registers the channel unless its virtual thread gave it up or it is
         * registered already (queued twice).
         *
         * @return false when the channel still has a cancelled key (not dropped yet): try after a selectNow
         */
        private boolean register() {
            synchronized (this) {
                if (withdrawn || key != null) return true;
                SocketChannel ch = connection.channel();
                if (ch.keyFor(selector) != null) return false;
                try {
                    key = ch.register(selector, SelectionKey.OP_READ, this);
                    return true;
                } catch (ClosedChannelException e) {
                    readable = true;  // its read fails, and the connection closes
                }
            }
            connection.wake();
            return true;
        }

        /**
         * On the selector's thread, {@code k} cancelled: notes the socket readable unless the virtual
         * thread gave the key up meanwhile.
         *
         * @return true when noted: wake the connection (its next wait reads it if it is not waiting)
         */
        private synchronized boolean reported(SelectionKey k) {
            if (key != k) return false;
            key = null;
            readable = true;
            return true;
        }
    }
}

package kiln.loom;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ThreadFactory;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.spi.Connection;
import kiln.server.Connections;
import kiln.server.OwnServer;
import kiln.server.ServerLimits;
import kiln.server.VirtualThreads;

/**
 * kiln's own HTTP/1.1 layer served by one virtual thread per connection, with blocking socket I/O:
 * the Kilim server's twin ({@code kiln.kilim.KilimServer}), except for how a connection waits. The
 * parsing, writing, buffers, deadlines, the reaper, the cap's 503 and the error answers are the same
 * code ({@link Connection}, {@link Connections}); here a blocked read, write, {@code join()} or
 * {@code Thread.sleep} parks the connection's virtual thread and frees its carrier. The one
 * exception to blocking I/O: while a streamed response goes on, its socket is non-blocking and
 * registered with the stream selector, and a write that finds it full goes back to blocking mode.
 *
 * <pre>{@code
 * LoomServer server = new LoomServer("127.0.0.1", 8080, router);
 * server.start();
 * ...
 * server.stop(5_000);
 * }</pre>
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>{@code kiln-accept}: a platform thread blocked in {@code accept()}; it starts one virtual
 *       thread per connection.</li>
 *   <li>{@code kiln-conn-N}: the virtual threads, one per open connection; handlers run here.
 *       They run on the JDK's carrier threads ({@code ForkJoinPool-1-worker-N}, one per core or
 *       {@code --threads}).</li>
 *   <li>{@code kiln-reaper}: once a second, half-closes connections past their idle, header or
 *       write deadline: the blocked read or write then returns, and the connection closes.</li>
 *   <li>{@code kiln-stream-selector}: a platform thread with one selector that watches the sockets of
 *       connections whose streamed response goes on, so that a client that leaves, or sends junk,
 *       while its stream waits between parts is noticed at once ({@link StreamSelector}).</li>
 * </ul>
 * Needs JDK 21 or newer at run time; {@link #start} refuses to start on an older one.
 */
public final class LoomServer extends OwnServer {
    private static final Logger LOG = Logger.getLogger(LoomServer.class.getName());

    private final Router router;
    private Thread acceptor;
    private StreamSelector watch;

    /**
     * @param bindAddress address to listen on, e.g. "0.0.0.0" or "127.0.0.1"
     * @param port        TCP port, 0 for any free port
     * @param router      the handlers
     */
    public LoomServer(String bindAddress, int port, Router router) {
        super(bindAddress, port, router);
        this.router = router;
    }

    /**
     * Sets the limits: timeouts and minimum data rates, the connection cap and each client's share,
     * the most content a request may have (default {@link ServerLimits#defaults()}; the request
     * memory and the stream limits are the router's, {@link kiln.server.AbstractRouter#limits}).
     * Call before {@link #start}.
     */
    public LoomServer limits(ServerLimits limits) {
        connections.limits(limits);
        return this;
    }

    /**
     * Binds the socket and starts accepting.
     *
     * @throws java.net.BindException        when the port is in use or the address is not local
     * @throws UnsupportedOperationException on a JDK without virtual threads (before 21)
     */
    public void start() throws IOException {
        ThreadFactory virtualThreads = VirtualThreads.factory("kiln-conn-");
        ServerSocketChannel ssc = bind(true);
        try {
            watch = new StreamSelector();
        } catch (IOException e) {
            ssc.close();
            throw e;
        }
        connections.start();
        // A platform thread, not daemon: it keeps the JVM alive while the server runs (virtual threads never do).
        acceptor = new Thread(() -> accept(ssc, virtualThreads), "kiln-accept");
        acceptor.start();
    }

    /**
     * Graceful stop: closes the listening socket, lets requests in flight finish (up to
     * {@code graceMillis}), answers them with {@code Connection: close}, then ends the idle
     * connections.
     */
    @Override
    public void stop(long graceMillis) {
        beginStop();
        connections.finishStop(graceMillis);
        connections.endAll();
        if (acceptor != null) {
            try {
                acceptor.join(graceMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (watch != null) watch.stop();
    }

    /** The accept loop: blocks in accept(), starts a virtual thread per connection under the cap. */
    private void accept(ServerSocketChannel ssc, ThreadFactory virtualThreads) {
        while (!connections.isStopping()) {
            SocketChannel ch;
            try {
                ch = ssc.accept();
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            } catch (ClosedChannelException e) {
                return;  // stopped (AsynchronousCloseException is one)
            } catch (IOException e) {
                // Typically EMFILE ("Too many open files") under a connection flood: keep the
                // server alive, log at most once a second, and let the backlog wait.
                connections.acceptFailed(e);
                if (!sleep(10)) return;
                continue;
            }
            InetSocketAddress client = connections.admit(ch);
            if (client == null) continue;  // over a cap: answered 503 and closed
            Connection c = new Connection(connections, ch, client);
            try {
                virtualThreads.newThread(() -> serve(c)).start();
            } catch (RuntimeException | OutOfMemoryError e) {
                LOG.log(Level.WARNING, "cannot start a virtual thread for a connection; closing it", e);
                Connections.closeQuietly(ch);
                connections.closed(c);
            }
        }
    }

    private static boolean sleep(long ms) {
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** One connection's life, on its virtual thread: the loop of kiln's connection state machine ({@link Connection}), blocking in each wait. */
    private void serve(Connection c) {
        SocketChannel ch = c.channel();
        StreamSelector.Watched watched = null;  // from its first streamed wait: the socket watched, non-blocking, while a stream goes on
        connections.opened(c);
        try {
            while (true) {
                switch (c.next()) {
                    case READ -> {
                        if (watched != null) watched.blocking();
                        c.prepareRead();  // arms the idle or header deadline
                        c.read(ch.read(c.readBuffer()));
                    }
                    case WRITE -> write(c, watched);
                    case HANDLE -> c.respond(router.dispatch(c.request()));
                    case WAIT -> {
                        if (watched == null) watched = watch.watch(c);
                        watched.await();  // parks until the stream has work or its client sent something
                    }
                    case SHUTDOWN_OUTPUT -> {
                        ch.shutdownOutput();  // a failure: the client reset the connection, which closes
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
            Connections.closeQuietly(ch);
            watch.closed(ch);
            connections.closed(c);
        }
    }

    /** Writes the output; a watched stream's socket is non-blocking, and goes back to blocking mode when it is full. */
    private static void write(Connection c, StreamSelector.Watched watched) {
        c.beginWrite();  // arms the write deadline
        ByteBuffer bytes = c.output();
        try {
            while (bytes.hasRemaining()) {
                if (c.channel().write(bytes) == 0 && watched != null) watched.blocking();
            }
            c.written();
        } catch (IOException e) {
            c.writeFailed(e);
        }
    }
}

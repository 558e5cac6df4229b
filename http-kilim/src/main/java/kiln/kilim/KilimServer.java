package kiln.kilim;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;

import kilim.AffineScheduler;
import kilim.Pausable;
import kilim.Scheduler;
import kilim.Task;
import kilim.nio.EndPoint;
import kilim.nio.NioSelectorScheduler;
import kiln.app.Failures;
import kiln.app.Launcher;
import kiln.app.Limits;
import kiln.app.Reply;
import kiln.app.ServerOptions;
import kiln.app.Threads;
import kiln.db.QueryFuture;

/**
 * The Kilim fiber HTTP/1.1 server: one NIO selector thread, a pool of carrier threads running one
 * fiber per connection ({@link HttpConnection}), and a {@link Router} of handlers.
 *
 * <pre>{@code
 * KilimServer server = new KilimServer("127.0.0.1", 8080, 2, router);
 * server.start();
 * ...
 * server.stop(5_000);
 * }</pre>
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>{@code KilimSelector}: Kilim's selector thread; wakes fibers whose sockets are ready.</li>
 *   <li>carrier threads ({@code threads}, default one per core): run the listener fiber and the
 *       connection fibers. Handlers run here and must never block (see {@link Handler}).</li>
 *   <li>{@code kiln-timeouts}: once a second, half-closes connections past their idle, header or
 *       write deadline (see {@link HttpConnection}).</li>
 *   <li>{@code kiln-carrier-watch}: reports a handler that holds its carrier thread too long
 *       ({@link CarrierWatch}).</li>
 * </ul>
 * Beyond {@link #maxConnections} open connections, a new connection gets a one-shot 503 and is
 * closed, so a flood cannot exhaust the process's file descriptors.
 * This server binds its own listening socket (Kilim's built-in listener binds only 0.0.0.0).
 */
public final class KilimServer implements Launcher.Server {
    private static final Logger LOG = Logger.getLogger(KilimServer.class.getName());

    private final String bindAddress;
    private final int requestedPort;
    private final int threads;
    private final Router router;
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final Set<HttpConnection> open = ConcurrentHashMap.newKeySet();
    private long idleTimeoutNanos = TimeUnit.SECONDS.toNanos(60);
    private long headerTimeoutNanos = TimeUnit.SECONDS.toNanos(10);
    private int maxConnections = ServerOptions.defaultMaxConnections();
    private long blockedCarrierMs = 100;
    private CarrierWatch carrierWatch = new CarrierWatch(0);
    private volatile boolean stopping;
    private ScheduledExecutorService reaper;
    private ServerSocketChannel channel;
    private NioSelectorScheduler selector;
    private Scheduler carriers;

    /**
     * @param bindAddress address to listen on, e.g. "0.0.0.0" or "127.0.0.1"
     * @param port        TCP port, 0 for any free port
     * @param threads     carrier threads, >= 1
     * @param router      the handlers
     */
    public KilimServer(String bindAddress, int port, int threads, Router router) {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        this.bindAddress = bindAddress;
        this.requestedPort = port;
        this.threads = threads;
        this.router = router;
    }

    /**
     * Sets how long a keep-alive connection may wait for its next request, and how long writing a
     * response to a client that does not read may take (default 60 s). Call before {@link #start}.
     */
    public KilimServer idleTimeout(long millis) {
        if (millis < 1) throw new IllegalArgumentException("idle timeout must be >= 1 ms, got " + millis);
        idleTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(millis);
        return this;
    }

    /**
     * Sets how long a request's head and body may take to arrive once its first byte is in
     * (default 10 s); a slower client gets 408 and is closed. Call before {@link #start}.
     */
    public KilimServer headerTimeout(long millis) {
        if (millis < 1) throw new IllegalArgumentException("header timeout must be >= 1 ms, got " + millis);
        headerTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(millis);
        return this;
    }

    /**
     * Sets the most connections open at once (default: the process's open-files limit minus 64,
     * kept for LMDB, jars and logs). Call before {@link #start}.
     */
    public KilimServer maxConnections(int n) {
        if (n < 1) throw new IllegalArgumentException("max connections must be >= 1, got " + n);
        maxConnections = n;
        return this;
    }

    /**
     * Sets how long one fiber may run on its carrier thread without pausing before the server logs
     * what it is blocked in, once per handler (default 100 ms; 0 turns the check off). See
     * {@link CarrierWatch}. Call before {@link #start}.
     */
    public KilimServer blockedCarrierThreshold(long millis) {
        if (millis < 0) throw new IllegalArgumentException("blocked-carrier threshold must be >= 0 ms, got " + millis);
        blockedCarrierMs = millis;
        return this;
    }

    CarrierWatch carrierWatch() {
        return carrierWatch;
    }

    /** @return the connection cap in force */
    public int maxConnections() {
        return maxConnections;
    }

    long idleTimeoutNanos() {
        return idleTimeoutNanos;
    }

    long headerTimeoutNanos() {
        return headerTimeoutNanos;
    }

    /**
     * Checks that the classes this server runs were woven, binds the socket and starts accepting.
     *
     * @throws java.net.BindException when the port is in use or the address is not local
     * @throws IllegalStateException  when Kilim's weaver has not processed the classes
     */
    public void start() throws IOException {
        requireWoven(HttpConnection.class);
        requireWoven(QueryFuture.class);
        ServerSocketChannel ssc = ServerSocketChannel.open();
        try {
            ssc.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            ssc.bind(new InetSocketAddress(bindAddress, requestedPort), Limits.BACKLOG);
            ssc.configureBlocking(false);
        } catch (IOException e) {
            ssc.close();
            throw e;
        }
        channel = ssc;
        selector = new NioSelectorScheduler();
        carriers = new AffineScheduler(threads, 0);
        carrierWatch = new CarrierWatch(blockedCarrierMs);
        reaper = Executors.newSingleThreadScheduledExecutor(Threads.daemon("kiln-timeouts"));
        reaper.scheduleWithFixedDelay(this::expireOverdue, 1, 1, TimeUnit.SECONDS);
        Task listener = new Listener(ssc);
        listener.setScheduler(carriers);
        listener.start();
    }

    private void expireOverdue() {
        long now = System.nanoTime();
        int expired = 0;
        for (HttpConnection c : open) {
            if (c.expireIfOverdue(now)) expired++;
        }
        if (expired > 0) LOG.fine("timed out " + expired + " connections");
    }

    /** @return the port actually bound (useful with port 0) */
    @Override
    public int port() {
        return channel.socket().getLocalPort();
    }

    /** @return open client connections right now */
    public int connections() {
        return connections.get();
    }

    boolean isStopping() {
        return stopping;
    }

    /**
     * Graceful stop: closes the listening socket, lets requests in flight finish (up to
     * {@code graceMillis}), answers them with {@code Connection: close}, then stops the threads.
     */
    @Override
    public void stop(long graceMillis) {
        stopping = true;
        try {
            if (channel != null) channel.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "closing the listening socket", e);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(graceMillis);
        while (inFlight.get() > 0 && System.nanoTime() < deadline) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        if (inFlight.get() > 0) LOG.warning(inFlight.get() + " requests still running after " + graceMillis + " ms; stopping anyway");
        if (reaper != null) reaper.shutdownNow();
        carrierWatch.stop();
        if (carriers != null) carriers.shutdown();
        if (selector != null) selector.shutdown();
    }

    /** Runs the handler; an exception becomes the failure policy's reply. Called from connection fibers. */
    Reply respond(HttpRequest request) throws Pausable {
        inFlight.incrementAndGet();
        try {
            return router.dispatch(request);
        } catch (Exception e) {
            return Failures.toReply(e, request);
        } finally {
            inFlight.decrementAndGet();
        }
    }

    void connectionOpened(HttpConnection c) {
        open.add(c);
    }

    void connectionClosed(HttpConnection c) {
        open.remove(c);
        connections.decrementAndGet();
    }

    static void requireWoven(Class<?> c) {
        try {
            c.getField("$isWoven");
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(c.getName() + " was not woven by Kilim: build with 'mvn package' (the kilim"
                + " plugin weaves in process-classes; a bare 'mvn compile' or an IDE build leaves classes unwoven)");
        }
    }

    private static void closeQuietly(SocketChannel ch) {
        if (ch == null) return;
        try {
            ch.close();
        } catch (IOException ignored) {
            // already failing; the accept error is what gets logged
        }
    }

    /** The accept loop, itself a fiber: pauses until the selector reports a pending connection. */
    private final class Listener extends Task<Object> {
        private final ServerSocketChannel ssc;
        private long lastAcceptErrorLog;
        private long lastRefusalLog;
        private long refusedSinceLog;

        Listener(ServerSocketChannel ssc) {
            this.ssc = ssc;
        }

        @Override
        public void execute() throws Pausable {
            EndPoint endpoint = new EndPoint(selector, ssc);
            while (!stopping) {
                SocketChannel ch = null;
                boolean backOff = false;
                try {
                    ch = ssc.accept();
                    if (ch != null) {
                        ch.configureBlocking(false);
                        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                    }
                } catch (ClosedChannelException e) {
                    return;
                } catch (IOException e) {
                    // Typically EMFILE ("Too many open files") under a connection flood: keep the
                    // server alive, log at most once a second, and let the backlog wait.
                    long now = System.currentTimeMillis();
                    if (now - lastAcceptErrorLog > 1000) {
                        lastAcceptErrorLog = now;
                        LOG.warning("accept failed (" + e.getMessage() + "); " + connections.get() + " connections open");
                    }
                    closeQuietly(ch);
                    ch = null;
                    backOff = true;
                }
                // Pausing inside a catch block trips Kilim's weaver (VerifyError), so pause out here.
                if (backOff) {
                    Task.sleep(10);
                    continue;
                }
                if (ch == null) {
                    try {
                        endpoint.pauseUntilAcceptable();
                    } catch (IOException e) {
                        LOG.log(Level.SEVERE, "listening socket failed; no longer accepting connections", e);
                        return;
                    }
                    continue;
                }
                if (connections.get() >= maxConnections) {
                    refuse(ch);
                    continue;
                }
                connections.incrementAndGet();
                HttpConnection c = new HttpConnection(KilimServer.this, new EndPoint(selector, ch));
                c.setScheduler(carriers);
                c.start();
            }
        }

        /**
         * Answers a connection over the cap with one non-blocking write of a 503 and closes it. The
         * write may be partial; the close is what matters. Logged at most once per 10 s with a count.
         */
        private void refuse(SocketChannel ch) {
            try {
                ch.write(ByteBuffer.wrap(Reply.unavailable("too many connections; retry shortly").toClosingResponse()));
            } catch (IOException ignored) {
                // best effort: the client may already be gone
            }
            closeQuietly(ch);
            refusedSinceLog++;
            long now = System.currentTimeMillis();
            if (now - lastRefusalLog > 10_000) {
                LOG.warning("refused " + refusedSinceLog + " connection(s) with 503 since the last report: " + connections.get()
                    + " open, the cap is " + maxConnections + " (--max-connections); reporting at most every 10 s");
                lastRefusalLog = now;
                refusedSinceLog = 0;
            }
        }
    }
}

package kiln.server;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.spi.ClientSocket;
import kiln.http.spi.Connection;
import kiln.http.HttpDate;
import kiln.http.Response;
import kiln.http.spi.MemoryBudget;
import kiln.http.spi.ResponseWriter;

/**
 * The server side of kiln's own HTTP layer, shared by the front ends that use it: the limits
 * ({@link ServerLimits}: the timeouts and minimum data rates, the connection cap and each client's
 * share, the request memory), the open {@link Connection}s and the reaper
 * thread that expires overdue ones, the one-shot 503 beyond the caps, the requests in flight that
 * a graceful stop waits for, and what the connections report to the router (streams begun and
 * ended, in the metrics; requests refused before routing, to the middleware). It never waits for a
 * socket itself: the front end's accept loop and connection loops do, in their own way.
 *
 * <p>Life of a connection: the accept loop calls {@link #admit} (beyond the cap the connection is
 * answered 503 and closed), then the front end calls {@link #opened} as it starts serving the
 * connection (Kilim's selector at accept, loom's virtual thread as it begins) and finally
 * {@link #closed}. The connection itself reports its requests and streams ({@link Connection.Owner}).
 *
 * <h2>Threads</h2>
 * {@code kiln-reaper} ({@link Reaper}): once a second, half-closes connections past their idle, header or write
 * deadline (see {@link Connection}).
 */
public final class Connections implements Connection.Owner {
    private static final Logger LOG = Logger.getLogger(Connections.class.getName());

    private final AbstractRouter<?, ?> router;
    private final AtomicInteger count = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final Set<Connection> open = ConcurrentHashMap.newKeySet();
    private ServerLimits limits = ServerLimits.defaults();
    private long idleTimeoutNanos;
    private long headerTimeoutNanos;
    private long rateGraceNanos;
    private volatile boolean stopping;
    /** The front end's loop clock ({@link #useClock}); null: the system's clocks. */
    private LoopClock clock;
    private Reaper reaper;
    // Only the one accept loop touches these.
    private long lastAcceptErrorLog;
    private long lastRefusalLog;
    private long refusedSinceLog;

    /** @param router the pipeline the connections' requests go through: its metrics count them and their streams */
    public Connections(AbstractRouter<?, ?> router) {
        this.router = router;
        router.metrics().connections(count::get);
        limits(ServerLimits.defaults());
    }

    /**
     * Sets the limits ({@link ServerLimits#defaults()} until then); the router's request memory and
     * per-client shares are those it was given ({@link AbstractRouter#limits}). Call before {@link #start}.
     */
    public void limits(ServerLimits limits) {
        this.limits = limits;
        idleTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(limits.idleTimeoutMs());
        headerTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(limits.headerTimeoutMs());
        rateGraceNanos = TimeUnit.MILLISECONDS.toNanos(limits.rateGraceMs());
    }

    /** @return the limits in force */
    public ServerLimits limits() {
        return limits;
    }

    /**
     * Keeps the connections' deadlines and {@code Date} headers by {@code clock}, which the front
     * end's loop reads once per turn, instead of reading the system's clocks for each request. The
     * reaper still reads {@link System#nanoTime()}. Call before {@link #start}.
     */
    public void useClock(LoopClock clock) {
        this.clock = clock;
    }

    @Override
    public long nanoTime() {
        LoopClock c = clock;
        return c == null ? System.nanoTime() : c.nanoTime();
    }

    @Override
    public byte[] date() {
        LoopClock c = clock;
        return c == null ? HttpDate.nowAscii() : HttpDate.asciiAt(c.currentTimeMillis());
    }

    @Override
    public int maxContentBytes() {
        return limits.maxContentBytes();
    }

    @Override
    public long idleTimeoutNanos() {
        return idleTimeoutNanos;
    }

    @Override
    public long headerTimeoutNanos() {
        return headerTimeoutNanos;
    }

    @Override
    public MemoryBudget requestMemory() {
        return router.requestMemory();
    }

    @Override
    public long minRequestRate() {
        return limits.minRequestRate();
    }

    @Override
    public long minResponseRate() {
        return limits.minResponseRate();
    }

    @Override
    public long rateGraceNanos() {
        return rateGraceNanos;
    }

    /** Starts the reaper thread. */
    public void start() {
        reaper = new Reaper(1000, this::expireOverdue);
    }

    private void expireOverdue() {
        long now = System.nanoTime();  // not the loop's clock, which stops while the loop sleeps
        int expired = 0;
        for (Connection c : open) {
            Connection.Shutdown s = c.expireIfOverdue(now);
            if (s != Connection.Shutdown.NONE) {
                shutdown(c.socket(), s == Connection.Shutdown.INPUT_AND_OUTPUT);
                expired++;
            }
        }
        if (expired > 0) LOG.fine("timed out " + expired + " connections");
    }

    /**
     * Half-closes {@code s} from a thread other than its loop's: the loop's blocked read then sees
     * end-of-stream (its write fails, when {@code output} is shut too) and closes the socket itself.
     * Never a close from here: the loop may be reading or writing it, or waiting for it in a poll.
     */
    private static void shutdown(ClientSocket s, boolean output) {
        try {
            s.shutdownInput();
            if (output) s.shutdownOutput();
        } catch (IOException e) {
            LOG.log(Level.FINE, "half-closing a connection", e);
        }
    }

    /** @return open client connections right now */
    public int count() {
        return count.get();
    }

    /** @return true once a stop has begun: responses then close their connections */
    @Override
    public boolean isStopping() {
        return stopping;
    }

    /**
     * {@link #admit(InetSocketAddress)} for a JDK channel: a refused one gets one non-blocking write
     * of the 503 (the write may be partial; the close is what matters) and is closed.
     *
     * @return the client's address when the connection is to be served (give it to its
     *         {@link Connection}); null when it was refused, or reset before it was accepted
     */
    public InetSocketAddress admit(SocketChannel ch) {
        InetSocketAddress client;
        try {
            client = (InetSocketAddress) ch.getRemoteAddress();
        } catch (IOException e) {
            closeQuietly(ch);  // reset before it was accepted
            return null;
        }
        byte[] refusal = admit(client);
        if (refusal == null) return client;
        try {
            ch.write(ByteBuffer.wrap(refusal));
        } catch (IOException ignored) {
            // best effort: the client may already be gone
        }
        closeQuietly(ch);
        return null;
    }

    /**
     * The accept loop's check of a new connection from {@code client} against the cap and its
     * client's share, with no wait: within both it is counted (serve it, then {@link #closed}); else
     * the caller writes it the 503 returned, with {@code Retry-After: 1}, once and without waiting,
     * and closes it. Refusals are logged at most once per 10 s, with a count. Call from one thread.
     *
     * @return null when the connection is to be served; else the bytes of the refusal to write
     */
    public byte[] admit(InetSocketAddress client) {
        String refusal;
        if (count.get() >= limits.maxConnections()) {
            refusal = "too many connections; retry shortly";
        } else if (!router.clients().connected(client.getAddress())) {
            refusal = "too many connections from " + client.getAddress().getHostAddress() + "; retry shortly";
        } else {
            count.incrementAndGet();
            return null;
        }
        refusedSinceLog++;
        long now = System.currentTimeMillis();
        if (now - lastRefusalLog > 10_000) {
            LOG.warning("refused " + refusedSinceLog + " connection(s) with 503 since the last report: " + count.get()
                + " open, the cap is " + limits.maxConnections() + " (--max-connections), " + limits.maxClientConnections()
                + " per client (--max-client-connections); last: " + refusal + "; reporting at most every 10 s");
            lastRefusalLog = now;
            refusedSinceLog = 0;
        }
        return ResponseWriter.closing(Response.unavailable(refusal));
    }

    /**
     * The accept loop's report of a failed accept, typically EMFILE ("Too many open files") under a
     * connection flood: logged at most once a second. The caller backs off briefly and goes on.
     */
    public void acceptFailed(IOException e) {
        long now = System.currentTimeMillis();
        if (now - lastAcceptErrorLog > 1000) {
            lastAcceptErrorLog = now;
            LOG.warning("accept failed (" + e.getMessage() + "); " + count.get() + " connections open");
        }
    }

    /** A connection is served from now on: the reaper watches its deadlines. */
    public void opened(Connection c) {
        open.add(c);
    }

    /** A connection's loop ended and its channel is closed: what it had open is counted as ended. */
    public void closed(Connection c) {
        c.closed();
        open.remove(c);
        count.decrementAndGet();
        InetSocketAddress client = c.remoteAddress();
        if (client != null) router.clients().disconnected(client.getAddress());
    }

    @Override
    public void requestStarted() {
        inFlight.incrementAndGet();
    }

    @Override
    public void requestEnded() {
        inFlight.decrementAndGet();
    }

    @Override
    public void refused(java.net.InetSocketAddress remote, Response response) {
        router.refused(remote, response);
    }

    /**
     * Begins a stop: from now on every response closes its connection, and every streamed body ends
     * at its next step (its wait is woken). Close the listening socket next.
     */
    public void beginStop() {
        stopping = true;
        for (Connection c : open) c.stopStream();
    }

    /** Waits up to {@code graceMillis} for the requests in flight to finish, then stops the reaper. */
    public void finishStop(long graceMillis) {
        stopping = true;
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
        if (reaper != null) reaper.stop();
    }

    /**
     * Half-closes every open connection, as the reaper does an overdue one: each connection's own
     * loop then sees end-of-stream and closes. For the end of a stop, after {@link #finishStop}.
     */
    public void endAll() {
        for (Connection c : open) shutdown(c.socket(), true);
    }

    /** Closes {@code s} (a channel, a {@link ClientSocket}; nothing for null), ignoring a failure: for sockets being given up on. */
    public static void closeQuietly(Closeable s) {
        if (s == null) return;
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing left to do for a socket that cannot even close
        }
    }
}

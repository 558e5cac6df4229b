package kiln.server;

import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import java.util.logging.Logger;

import kiln.http.Response;
import kiln.http.spi.ResponseWriter;

/**
 * The header-read timeout (slowloris) and the connection-cap report for server libraries that lack
 * them: the server's {@link Reaper} thread, {@code kiln-reaper}, looks at every open connection a few times per
 * timeout and expires a connection whose request head has been arriving for longer than
 * {@code --header-timeout}, and logs, at most once per {@value #CAP_REPORT_MS} ms, that the server
 * is at {@code --max-connections}.
 *
 * <p>A head is timed from the first tick that sees it in progress, so a head is expired between
 * one and {@code 1 + 1/}{@value #TICKS_PER_TIMEOUT} header timeouts after its first byte. The
 * probe reads another thread's parser state without a lock: a stale read only delays a timeout by
 * a tick.
 *
 * @param <C> the library's connection type
 */
public final class HeaderTimeouts<C> {
    private static final Logger LOG = Logger.getLogger(HeaderTimeouts.class.getName());
    /** Ticks per header timeout: the timeout's precision. */
    static final int TICKS_PER_TIMEOUT = 4;
    /** At most one "at the connection cap" line per this many ms. */
    static final long CAP_REPORT_MS = 10_000;

    /** What the timeouts need to know about, and do to, one connection. */
    public interface Probe<C> {
        /** @return true while a request head has started arriving and is not complete */
        boolean readingHead(C connection);

        /** @return how many requests the connection has begun so far (tells one head from the next) */
        long requestsBegun(C connection);

        /** Answers 408 if the library allows it, then closes; must not block. */
        void expire(C connection);
    }

    /**
     * What a {@link Probe#expire} writes before closing, where the library lets it write raw bytes:
     * 408 with the contract's head and {@code Connection: close}. Built per call, so its Date is now.
     */
    public static ByteBuffer requestTimeoutResponse() {
        return ByteBuffer.wrap(ResponseWriter.closing(Response.error(408, "request head not complete in time")));
    }

    /** A head in progress: which request it is and when the reaper first saw it. */
    private static final class Head {
        final long request;
        final long seenAt;

        Head(long request, long seenAt) {
            this.request = request;
            this.seenAt = seenAt;
        }
    }

    private final String server;
    private final long headerTimeoutMs;
    private final Supplier<? extends Collection<? extends C>> connections;
    private final Probe<C> probe;
    private final int maxConnections;
    private final IntSupplier openConnections;
    private final Reaper reaper;
    /** Touched only by the timer thread. */
    private Map<C, Head> heads = new IdentityHashMap<>();
    private long lastCapReport;
    private long expiredSinceReport;

    /**
     * Starts watching request heads and the cap.
     *
     * @param server          server name for the log, e.g. "jetty"
     * @param headerTimeoutMs --header-timeout, ms (> 0)
     * @param connections     the connections open now (a snapshot or a concurrent view)
     * @param probe           reads and expires one connection
     * @param maxConnections  --max-connections
     * @param openConnections how many connections are open now, for the cap report
     * @return the running timeouts; {@link #stop} it with the server
     */
    public static <C> HeaderTimeouts<C> headsAndCap(String server, long headerTimeoutMs,
                                                     Supplier<? extends Collection<? extends C>> connections, Probe<C> probe,
                                                     int maxConnections, IntSupplier openConnections) {
        return new HeaderTimeouts<>(server, headerTimeoutMs, connections, probe, maxConnections, openConnections, true);
    }

    /** As {@link #headsAndCap}, but without the thread: a test calls {@link #tick} with its own clock. */
    static <C> HeaderTimeouts<C> manual(long headerTimeoutMs, Supplier<? extends Collection<? extends C>> connections, Probe<C> probe) {
        return new HeaderTimeouts<>("test", headerTimeoutMs, connections, probe, Integer.MAX_VALUE, () -> 0, false);
    }

    /**
     * Starts watching only the cap, for a library that times request heads out itself.
     *
     * @return the running timeouts; {@link #stop} it with the server
     */
    public static HeaderTimeouts<Object> capOnly(String server, int maxConnections, IntSupplier openConnections) {
        return new HeaderTimeouts<>(server, 0, null, null, maxConnections, openConnections, true);
    }

    private HeaderTimeouts(String server, long headerTimeoutMs, Supplier<? extends Collection<? extends C>> connections,
                            Probe<C> probe, int maxConnections, IntSupplier openConnections, boolean scheduled) {
        if (probe != null && headerTimeoutMs < 1) {
            throw new IllegalArgumentException("headerTimeoutMs must be positive, got " + headerTimeoutMs);
        }
        this.server = server;
        this.headerTimeoutMs = headerTimeoutMs;
        this.connections = connections;
        this.probe = probe;
        this.maxConnections = maxConnections;
        this.openConnections = openConnections;
        this.lastCapReport = System.nanoTime() / 1_000_000 - CAP_REPORT_MS;
        if (!scheduled) {
            this.reaper = null;
            return;
        }
        long tick = probe == null ? 1000 : Math.max(10, Math.min(1000, headerTimeoutMs / TICKS_PER_TIMEOUT));
        this.reaper = new Reaper(tick, () -> tick(System.nanoTime() / 1_000_000));
    }

    /** Stops the timeouts. */
    public void stop() {
        if (reaper != null) reaper.stop();
    }

    /** One look at every connection, at {@code nowMs} (monotonic ms). Package-private for tests. */
    void tick(long nowMs) {
        if (probe != null) expireSlowHeads(nowMs);
        reportAtMostEveryInterval(nowMs);
    }

    private void expireSlowHeads(long nowMs) {
        Map<C, Head> next = new IdentityHashMap<>();
        for (C c : connections.get()) {
            if (!probe.readingHead(c)) continue;
            long request = probe.requestsBegun(c);
            Head h = heads.get(c);
            if (h == null || h.request != request) h = new Head(request, nowMs);
            if (nowMs - h.seenAt >= headerTimeoutMs) {
                probe.expire(c);
                expiredSinceReport++;
            } else {
                next.put(c, h);
            }
        }
        heads = next;
    }

    private void reportAtMostEveryInterval(long nowMs) {
        int open = openConnections.getAsInt();
        if ((open >= maxConnections || expiredSinceReport > 0) && nowMs - lastCapReport >= CAP_REPORT_MS) {
            if (open >= maxConnections) {
                LOG.warning(server + " is at the connection cap: " + open + " open, --max-connections " + maxConnections
                    + "; new connections wait in the listen backlog (reported at most every " + CAP_REPORT_MS / 1000 + " s)");
            }
            if (expiredSinceReport > 0) {
                LOG.info("closed " + expiredSinceReport + " connection(s) whose request head took longer than --header-timeout "
                    + headerTimeoutMs + " ms");
                expiredSinceReport = 0;
            }
            lastCapReport = nowMs;
        }
    }
}

package kiln.undertow;

import java.io.IOException;
import java.net.InetSocketAddress;

import io.undertow.Undertow;
import io.undertow.UndertowOptions;
import io.undertow.server.HttpHandler;
import io.undertow.server.handlers.GracefulShutdownHandler;
import kiln.server.ConnectionWatch;
import kiln.server.StepRouter;
import kiln.server.Launcher;
import kiln.http.Limits;
import kiln.server.ModeOptions;
import kiln.server.OpenStreams;
import kiln.server.ServerLimits;
import kiln.server.ServerOptions;
import kiln.server.WorkerPool;
import org.xnio.Options;

/**
 * Undertow serving an app's routes (a {@link StepRouter}: the demo's endpoints, the board, a user's)
 * with one core {@link HttpHandler} (no servlet layer).
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>{@code --threads N}: N IO threads (XNIO selector threads; they accept connections, parse
 *       requests and write responses).</li>
 *   <li>async mode: {@link AsyncHandler} queues each exchange to {@code --workers} worker threads
 *       ({@code kiln-worker-*}); one timer thread ({@code kiln-timer}) ends {@code /hello} delays.
 *       Undertow's own worker pool stays idle.</li>
 *   <li>blocking mode: {@link ThreadPerRequestHandler} dispatches each exchange to Undertow's worker pool
 *       (Undertow's default size: 8 per IO thread), where it blocks.</li>
 * </ul>
 *
 * <h2>Limits</h2>
 * Undertow has them all: {@code --header-timeout} is {@link UndertowOptions#REQUEST_PARSE_TIMEOUT}
 * (it closes the connection without a response), {@code --idle-timeout} is both
 * {@link UndertowOptions#NO_REQUEST_TIMEOUT} (idle between requests) and
 * {@link UndertowOptions#IDLE_TIMEOUT} (no progress reading or writing), and
 * {@code --max-connections} is XNIO's {@link Options#CONNECTION_HIGH_WATER}: at the cap the listener
 * stops accepting and new connections wait in the listen backlog. A {@link ConnectionWatch} over
 * Undertow's connector statistics logs the cap.
 */
final class UndertowServer implements Launcher.Server {
    /** Heap per open connection for the default cap, bytes: about 2.1 KB per idle connection measured, with room for a request (make bench-memory). */
    private static final int HEAP_PER_CONNECTION = 4096;
    private final Undertow undertow;
    private final GracefulShutdownHandler graceful;
    /** async mode only, else null */
    private final WorkerPool workerPool;
    private final int maxConnections;
    /** The streams being sent: ended first at a stop, so the graceful stop need not wait for them. */
    private final OpenStreams streams;
    private ConnectionWatch<Object> watch;

    /**
     * @param options   --bind, --port, --threads (IO threads), and the limits
     * @param mode      async (queue + workers) or blocking (worker pool, thread per request)
     * @param workers   worker threads in async mode, 1..3
     * @param routes    the app's routes, with its metrics ({@code options.applyTo} is applied here)
     */
    UndertowServer(ServerOptions options, ModeOptions.Mode mode, int workers, StepRouter routes) {
        HttpHandler handler;
        ServerLimits limits = options.limits(HEAP_PER_CONNECTION);
        StepRouter router = options.applyTo(routes, limits);
        streams = new OpenStreams();
        if (mode == ModeOptions.Mode.ASYNC) {
            workerPool = new WorkerPool(workers);
            handler = new AsyncHandler(router, workerPool, streams, options.maxContentBytes);
        } else {
            workerPool = null;
            handler = new ThreadPerRequestHandler(router, streams, options.maxContentBytes);
        }
        graceful = new GracefulShutdownHandler(handler);
        maxConnections = limits.maxConnections();
        undertow = Undertow.builder()
            .addHttpListener(options.port, options.bind)
            .setIoThreads(options.threadsOrDefault())
            .setSocketOption(Options.BACKLOG, Limits.BACKLOG)
            .setSocketOption(Options.CONNECTION_HIGH_WATER, maxConnections)
            .setSocketOption(Options.CONNECTION_LOW_WATER, maxConnections)
            .setServerOption(UndertowOptions.REQUEST_PARSE_TIMEOUT, (int) options.headerTimeoutMs)
            .setServerOption(UndertowOptions.NO_REQUEST_TIMEOUT, (int) options.idleTimeoutMs)
            .setServerOption(UndertowOptions.IDLE_TIMEOUT, (int) options.idleTimeoutMs)
            .setServerOption(UndertowOptions.ENABLE_STATISTICS, true)
            // The other front ends' head limits, as one: request line + header section; the field count.
            .setServerOption(UndertowOptions.MAX_HEADER_SIZE, Limits.MAX_HEAD_BYTES)
            .setServerOption(UndertowOptions.MAX_HEADERS, Limits.MAX_HEADERS)
            // The contract's Date header is written by Exchanges; no Connection: keep-alive on HTTP/1.1.
            .setServerOption(UndertowOptions.ALWAYS_SET_DATE, false)
            .setServerOption(UndertowOptions.ALWAYS_SET_KEEP_ALIVE, false)
            // Route on the path as sent (like the other front ends): /plain%74ext is not /plaintext.
            .setServerOption(UndertowOptions.DECODE_URL, false)
            .setHandler(graceful)
            .build();
        // Undertow's own count of the listener's open connections (its connector statistics)
        router.metrics().connections(() -> (int) undertow.getListenerInfo().get(0).getConnectorStatistics().getActiveConnections());
    }

    /**
     * Binds and starts serving.
     *
     * @throws IOException when the address cannot be bound (port in use, address not local)
     */
    void start() throws IOException {
        try {
            undertow.start();
            // Undertow times heads out itself: the watch only reports the cap.
            watch = ConnectionWatch.capOnly("undertow", maxConnections,
                () -> (int) undertow.getListenerInfo().get(0).getConnectorStatistics().getActiveConnections());
        } catch (RuntimeException e) {
            if (workerPool != null) workerPool.stop();
            // Undertow wraps the bind failure (java.net.BindException and friends) in a RuntimeException.
            if (e.getCause() instanceof IOException) throw (IOException) e.getCause();
            throw e;
        }
    }

    /** @return the bound port (the real one when started with port 0) */
    @Override
    public int port() {
        return ((InetSocketAddress) undertow.getListenerInfo().get(0).getAddress()).getPort();
    }

    /**
     * Refuses new requests (503), waits up to {@code graceMillis} for requests in flight (workers and
     * timer keep running meanwhile), then stops Undertow and the workers. The database stays open:
     * the caller closes it afterwards.
     */
    @Override
    public void stop(long graceMillis) {
        if (watch != null) watch.stop();
        streams.stop();  // open streams end now, so the grace period is for requests
        graceful.shutdown();
        try {
            graceful.awaitShutdown(graceMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        undertow.stop();
        if (workerPool != null) workerPool.stop();
    }
}

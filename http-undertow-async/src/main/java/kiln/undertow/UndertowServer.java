package kiln.undertow;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

import io.undertow.Undertow;
import io.undertow.UndertowOptions;
import io.undertow.connector.ByteBufferPool;
import io.undertow.server.DefaultByteBufferPool;
import io.undertow.server.HttpHandler;
import io.undertow.server.handlers.GracefulShutdownHandler;
import io.undertow.server.protocol.http.HttpOpenListener;
import kiln.server.ClientDeadlines;
import kiln.server.HeaderTimeouts;
import kiln.server.StepRouter;
import kiln.server.Launcher;
import kiln.http.Limits;
import kiln.server.ModeOptions;
import kiln.server.OpenStreams;
import kiln.server.ServerLimits;
import kiln.server.ServerOptions;
import kiln.server.WorkerPool;
import org.xnio.ChannelListeners;
import org.xnio.IoUtils;
import org.xnio.OptionMap;
import org.xnio.Options;
import org.xnio.StreamConnection;
import org.xnio.Xnio;
import org.xnio.XnioWorker;
import org.xnio.channels.AcceptingChannel;

/**
 * Undertow serving an app's routes (a {@link StepRouter}: the demo's endpoints, the board, a user's)
 * with one core {@link HttpHandler} (no servlet layer).
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>{@code --threads N}: N IO threads (XNIO selector threads; they accept connections, parse
 *       requests, read their content and write responses).</li>
 *   <li>async mode: {@link AsyncHandler} queues each exchange to {@code --workers} worker threads
 *       ({@code kiln-worker-*}); one timer thread ({@code kiln-timer}) ends {@code /hello} delays.
 *       Undertow's own worker pool stays idle.</li>
 *   <li>blocking mode: {@link ThreadPerRequestHandler} dispatches each exchange, its content read,
 *       to Undertow's worker pool (Undertow's default size: 8 per IO thread), where it blocks.</li>
 * </ul>
 *
 * <h2>Limits</h2>
 * {@code --header-timeout} is {@link UndertowOptions#REQUEST_PARSE_TIMEOUT} (it closes the connection
 * without a response), {@code --idle-timeout} is {@link UndertowOptions#NO_REQUEST_TIMEOUT} (idle
 * between requests) and {@code --max-connections} is XNIO's {@link Options#CONNECTION_HIGH_WATER}:
 * at the cap the listener stops accepting and new connections wait in the listen backlog. Undertow
 * has no deadline on a request's content nor on a write to a client that does not read (its
 * {@code IDLE_TIMEOUT} is never armed on an HTTP/1.1 connection, Undertow 2.4.4), so kiln keeps
 * both ({@link ClientDeadlines}) and reads the content itself, within the server's request memory
 * ({@link Exchanges#readContent}). Each client address holds at most {@code --max-client-connections}
 * connections ({@link ClientConnections}, which is why the listener is assembled here rather than by
 * {@link Undertow#builder()}). A {@link HeaderTimeouts} over Undertow's connector statistics logs the cap.
 */
final class UndertowServer implements Launcher.Server {
    /** Heap per open connection for the default cap, bytes: about 2.1 KB per idle connection measured, with room for a request (make bench-memory). */
    private static final int HEAP_PER_CONNECTION = 4096;
    /** Heap per open event stream, bytes: about 4.4 KB per subscriber measured at 19,500 in async mode (./ab-sweep.sh --subscribers 20000 --vps). */
    private static final int HEAP_PER_STREAM = 8192;
    private static final Logger LOG = Logger.getLogger(UndertowServer.class.getName());
    private final GracefulShutdownHandler graceful;
    /** async mode only, else null */
    private final WorkerPool workerPool;
    private final int maxConnections;
    /** The streams being sent: ended first at a stop, so the graceful stop need not wait for them. */
    private final OpenStreams streams;
    private final ClientDeadlines deadlines;
    private final HttpOpenListener openListener;
    private final ClientConnections clientConnections;
    private final InetSocketAddress address;
    private final int ioThreads;
    private XnioWorker worker;
    private AcceptingChannel<StreamConnection> listener;
    private HeaderTimeouts<Object> watch;

    /**
     * @param options   --bind, --port, --threads (IO threads), and the limits
     * @param mode      async (queue + workers) or blocking (worker pool, thread per request)
     * @param workers   worker threads in async mode, 1..3
     * @param routes    the app's routes, with its metrics ({@code options.applyTo} is applied here)
     */
    UndertowServer(ServerOptions options, ModeOptions.Mode mode, int workers, StepRouter routes) throws IOException {
        HttpHandler handler;
        ServerLimits limits = options.limits(HEAP_PER_CONNECTION, HEAP_PER_STREAM);
        ioThreads = options.threadsOrDefault();
        if (mode == ModeOptions.Mode.BLOCKING) limits = limits.streamsHoldThreads(workerThreads(), "Undertow's worker pool");
        StepRouter router = options.applyTo(routes, limits);
        deadlines = new ClientDeadlines(limits);
        streams = new OpenStreams(deadlines);
        Exchanges.Reading reading = new Exchanges.Reading(router.requestMemory(), deadlines);
        if (mode == ModeOptions.Mode.ASYNC) {
            workerPool = new WorkerPool(workers);
            handler = new AsyncHandler(router, workerPool, streams, options.maxContentBytes, reading);
        } else {
            workerPool = null;
            handler = new ThreadPerRequestHandler(router, streams, options.maxContentBytes, reading);
        }
        graceful = new GracefulShutdownHandler(handler);
        maxConnections = limits.maxConnections();
        openListener = new HttpOpenListener(buffers(), OptionMap.builder()
            .set(UndertowOptions.BUFFER_PIPELINED_DATA, true)
            .set(UndertowOptions.REQUEST_PARSE_TIMEOUT, (int) options.headerTimeoutMs)
            .set(UndertowOptions.NO_REQUEST_TIMEOUT, (int) options.idleTimeoutMs)
            .set(UndertowOptions.IDLE_TIMEOUT, (int) options.idleTimeoutMs)
            .set(UndertowOptions.ENABLE_STATISTICS, true)
            // The other front ends' head limits, as one: request line + header section; the field count.
            .set(UndertowOptions.MAX_HEADER_SIZE, Limits.MAX_HEAD_BYTES)
            .set(UndertowOptions.MAX_HEADERS, Limits.MAX_HEADERS)
            // The contract's Date header is written by Exchanges; no Connection: keep-alive on HTTP/1.1.
            .set(UndertowOptions.ALWAYS_SET_DATE, false)
            .set(UndertowOptions.ALWAYS_SET_KEEP_ALIVE, false)
            // Route on the path as sent (like the other front ends): /plain%74ext is not /plaintext.
            .set(UndertowOptions.DECODE_URL, false)
            .getMap());
        openListener.setRootHandler(graceful);
        clientConnections = new ClientConnections(openListener, router.clients());
        address = new InetSocketAddress(InetAddress.getByName(options.bind), options.port);
        // Undertow's own count of the listener's open connections (its connector statistics)
        router.metrics().connections(this::openConnections);
    }

    /** The buffers {@link Undertow#builder()} would choose for this heap: 16 KB direct ones above 128 MB. */
    private static ByteBufferPool buffers() {
        long heap = Runtime.getRuntime().maxMemory();
        boolean direct = heap >= 64L << 20;
        int size = heap < 64L << 20 ? 512 : heap < 128L << 20 ? 1024 : 16364;
        return new DefaultByteBufferPool(direct, size, -1, 4);
    }

    /** @return the worker pool's threads: 8 per IO thread, as {@link Undertow#builder()} makes it */
    private int workerThreads() {
        return ioThreads * 8;
    }

    private int openConnections() {
        return (int) openListener.getConnectorStatistics().getActiveConnections();
    }

    /**
     * Binds and starts serving: an XNIO worker with {@code --threads} IO threads and Undertow's HTTP
     * open listener behind {@link ClientConnections}, as {@link Undertow#start()} assembles it.
     *
     * @throws IOException when the address cannot be bound (port in use, address not local)
     */
    void start() throws IOException {
        try {
            worker = Xnio.getInstance(Undertow.class.getClassLoader()).createWorker(OptionMap.builder()
                .set(Options.WORKER_IO_THREADS, ioThreads)
                .set(Options.CONNECTION_HIGH_WATER, 1_000_000)
                .set(Options.CONNECTION_LOW_WATER, 1_000_000)
                .set(Options.WORKER_TASK_CORE_THREADS, workerThreads())
                .set(Options.WORKER_TASK_MAX_THREADS, workerThreads())
                .set(Options.TCP_NODELAY, true)
                .set(Options.CORK, true)
                .getMap());
            listener = worker.createStreamConnectionServer(address, ChannelListeners.openListenerAdapter(clientConnections), OptionMap.builder()
                .set(Options.WORKER_IO_THREADS, ioThreads)
                .set(Options.TCP_NODELAY, true)
                .set(Options.REUSE_ADDRESSES, true)
                .set(Options.BALANCING_TOKENS, 1)
                .set(Options.BALANCING_CONNECTIONS, 2)
                .set(Options.BACKLOG, Limits.BACKLOG)
                .set(Options.CONNECTION_HIGH_WATER, maxConnections)
                .set(Options.CONNECTION_LOW_WATER, maxConnections)
                .getMap());
            listener.resumeAccepts();
            // Undertow times heads out itself: the watch only reports the cap.
            watch = HeaderTimeouts.capOnly("undertow", maxConnections, this::openConnections);
        } catch (IOException | RuntimeException e) {
            stopListening();
            if (workerPool != null) workerPool.stop();
            deadlines.stop();
            throw e;
        }
    }

    /** @return the bound port (the real one when started with port 0) */
    @Override
    public int port() {
        return listener.getLocalAddress(InetSocketAddress.class).getPort();
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
        stopListening();
        deadlines.stop();
        if (workerPool != null) workerPool.stop();
    }

    private void stopListening() {
        IoUtils.safeClose(listener);
        if (worker == null) return;
        worker.shutdown();
        try {
            if (!worker.awaitTermination(5, TimeUnit.SECONDS)) worker.shutdownNow();
        } catch (InterruptedException e) {
            worker.shutdownNow();
            Thread.currentThread().interrupt();
        }
        LOG.fine("undertow stopped");
    }
}

package kiln.jetty;

import java.io.IOException;
import java.util.concurrent.Executor;
import java.util.logging.Level;
import java.util.logging.Logger;

import jakarta.servlet.http.HttpServlet;

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
import org.eclipse.jetty.http.HttpCompliance;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.server.internal.HttpConnection;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * Embedded Jetty 12 serving an app's routes (a {@link StepRouter}: the demo's endpoints, the board,
 * a user's) through one servlet mapped to {@code /*}.
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>{@code --threads N}: N selector threads (Jetty's IO threads, which also accept connections:
 *       the connector has no separate acceptor thread). Selectors run on Jetty's
 *       {@link QueuedThreadPool} (Jetty's default size, 8..200 threads), which also runs the
 *       servlet.</li>
 *   <li>async mode: {@link AsyncServlet} hands each request to {@code --workers} worker threads
 *       ({@code kiln-worker-*}) through their queue; one timer thread ({@code kiln-timer}) ends
 *       {@code /hello} delays. Pool threads never wait on the database.</li>
 *   <li>blocking mode: {@link BlockingServlet} runs the whole request on a pool thread, so at most
 *       200 requests are in progress at once.</li>
 *   <li>loom mode (JDK 21+): the same {@link BlockingServlet}, but Jetty runs each request on a new
 *       virtual thread ({@code kiln-jetty-vt-N}, through
 *       {@link QueuedThreadPool#setVirtualThreadsExecutor}): a blocked request parks its virtual
 *       thread, so the pool no longer bounds the requests in progress. What a Jetty user would pick
 *       today.</li>
 * </ul>
 *
 * <h2>Limits</h2>
 * {@code --idle-timeout} is the connector's idle timeout; {@code --max-connections} is a
 * {@link NetworkConnectionLimit}: at the cap Jetty stops accepting, so new connections wait in the
 * listen backlog instead of using descriptors. Jetty has no header-read timeout (a slowloris client
 * that sends a byte now and then resets the idle timeout forever), so a {@link HeaderTimeouts}
 * answers 408 and closes a connection whose request head takes longer than {@code --header-timeout};
 * it also logs the cap. A request's content is read by kiln ({@link Content}) within the server's
 * request memory and at the minimum data rate ({@link ClientDeadlines}): Jetty's own
 * {@code MinRequestDataRate} (deprecated in 12.1) is checked only when the application reads, so it
 * never ends a client that declares content and sends none. Each client address holds at most
 * {@code --max-client-connections} connections ({@link ClientConnections}); an HTTP/1.0 request's
 * {@code Expect: 100-continue} is ignored ({@link Http10IgnoresExpect}).
 */
final class JettyServer implements Launcher.Server {
    /** Heap per open connection for the default cap, bytes: about 4.2 KB per idle connection measured, with room for a request (make bench-memory). */
    private static final int HEAP_PER_CONNECTION = 8192;
    /**
     * Heap per open event stream, bytes, by mode: ./ab-sweep.sh --subscribers 20000 --vps measured
     * 6.9 KB per subscriber in async mode and 12 KB on virtual threads, where a 256 MB heap then ran
     * out of memory delivering the events; a blocking mode holds a thread per stream, and its threads
     * cap its streams first.
     */
    private static final int HEAP_PER_STREAM = 12288;
    private static final int HEAP_PER_STREAM_ON_VIRTUAL_THREADS = 20480;
    private static final Logger LOG = Logger.getLogger(JettyServer.class.getName());
    /** Names of the virtual threads of {@code --mode loom}: kiln-jetty-vt-0, -1... */
    static final String VIRTUAL_THREAD_PREFIX = "kiln-jetty-vt-";

    private final Server server;
    private final ServerConnector connector;
    /** async mode only, else null */
    private final WorkerPool workerPool;
    private final NetworkConnectionLimit connectionLimit;
    /** The servlet every request runs: async, blocking (also for loom), or a test's. */
    private final HttpServlet servlet;
    private final long headerTimeoutMs;
    /** The streams being sent (null for a test's servlet): ended first at a stop, so the graceful stop need not wait for them. */
    private final OpenStreams streams;
    /** The deadlines of request contents and stream writes (null for a test's servlet). */
    private final ClientDeadlines deadlines;
    private HeaderTimeouts<EndPoint> watch;

    /**
     * @param options   --bind, --port, --threads (selector threads), and the limits
     * @param mode      async (queue + workers), blocking (thread per request) or loom (virtual thread per request)
     * @param workers   worker threads in async mode, 1..3
     * @param router    the app's routes, with its metrics ({@code options.applyTo} is applied here)
     */
    JettyServer(ServerOptions options, ModeOptions.Mode mode, int workers, StepRouter router) {
        this(options, mode, workers, router, null);
    }

    /** For tests: serves {@code servlet} on every path, run the way {@code mode} runs the blocking servlet. */
    JettyServer(ServerOptions options, ModeOptions.Mode mode, HttpServlet servlet) {
        this(options, mode, 1, null, servlet);
    }

    private JettyServer(ServerOptions options, ModeOptions.Mode mode, int workers, StepRouter routes, HttpServlet testServlet) {
        QueuedThreadPool pool = new QueuedThreadPool();
        pool.setName("kiln-jetty");
        if (mode == ModeOptions.Mode.LOOM) {
            // Jetty's own support, as a Jetty user turns it on: tasks that may block (the servlet's)
            // run on a new virtual thread each; selectors stay on the pool's platform threads.
            Executor virtualThreads = VirtualThreads.getNamedVirtualThreadsExecutor(VIRTUAL_THREAD_PREFIX);
            if (virtualThreads == null) throw new IllegalStateException("--mode loom needs JDK 21 or newer (virtual threads)");
            pool.setVirtualThreadsExecutor(virtualThreads);
        }
        server = new Server(pool);
        server.setErrorHandler(new PlainErrorHandler());

        HttpConfiguration http = new HttpConfiguration();
        // The contract's Server and Date headers are written by Responses, in the contract's order.
        http.setSendServerVersion(false);
        http.setSendDateHeader(false);
        http.setSendXPoweredBy(false);
        // Jetty gives every connection its own header cache (a trie of headerCacheSize = 1024 rows,
        // about 100 KB of char[] once it holds the first request's fields). At 5000 keep-alive
        // connections that is ~490 MB, and a 256 MB heap ran out of memory (a class histogram at
        // c=2000 showed 197 MB of char[] for 2000 connections). Without the cache each request's
        // fields are parsed into new strings instead.
        http.setHeaderCacheSize(0);
        // RFC 9110 compliance allows a bare LF as a line end (RFC 9112 section 2.2: a recipient MAY);
        // kiln's contract refuses it with 400, as kiln's own parser and Undertow do.
        http.setHttpCompliance(HttpCompliance.RFC9110.without("kiln", HttpCompliance.Violation.LF_HEADER_TERMINATION));
        // kiln routes on the path's normal form (kiln.http.Paths), which removes dot-segments and
        // keeps empty ones: "//plaintext" is another path (404), "/%2e/plaintext" is "/plaintext".
        // Jetty's default refuses both as ambiguous (it protects servlet path mappings kiln has none of).
        http.setUriCompliance(UriCompliance.DEFAULT.with("kiln", UriCompliance.Violation.AMBIGUOUS_EMPTY_SEGMENT,
            UriCompliance.Violation.AMBIGUOUS_PATH_SEGMENT));
        http.addCustomizer(new Http10IgnoresExpect());
        connector = new ServerConnector(server, 0, options.threadsOrDefault(), new HttpConnectionFactory(http));
        connector.setHost(options.bind);
        connector.setPort(options.port);
        connector.setAcceptQueueSize(Limits.BACKLOG);
        connector.setIdleTimeout(options.idleTimeoutMs);
        server.addConnector(connector);
        ServerLimits limits = options.limits(HEAP_PER_CONNECTION, mode == ModeOptions.Mode.LOOM ? HEAP_PER_STREAM_ON_VIRTUAL_THREADS : HEAP_PER_STREAM);
        if (mode == ModeOptions.Mode.BLOCKING) limits = limits.streamsHoldThreads(pool.getMaxThreads(), "Jetty's pool");
        connectionLimit = new NetworkConnectionLimit(limits.maxConnections(), connector);
        server.addBean(connectionLimit);
        headerTimeoutMs = options.headerTimeoutMs;

        StepRouter router = testServlet != null ? null : options.applyTo(routes, limits);
        if (testServlet != null) {
            workerPool = null;
            streams = null;
            deadlines = null;
            servlet = testServlet;
        } else {
            deadlines = new ClientDeadlines(limits);
            streams = new OpenStreams(deadlines);
            connector.addBean(new ClientConnections(router.clients()));
            Content.Limits reading = new Content.Limits(router.requestMemory(), deadlines);
            // Jetty's own count of the connector's open connections, kept by the connection limit
            router.metrics().connections(connectionLimit::getNetworkConnectionCount);
            if (mode == ModeOptions.Mode.ASYNC) {
                workerPool = new WorkerPool(workers);
                servlet = new AsyncServlet(router, workerPool, streams, options.maxContentBytes, reading);
            } else {
                workerPool = null;  // blocking and loom: the same blocking servlet, on pool threads or virtual threads
                Executor runner = mode == ModeOptions.Mode.LOOM ? pool.getVirtualThreadsExecutor() : pool;
                servlet = new BlockingServlet(router, streams, options.maxContentBytes, reading, runner);
            }
        }
        ServletContextHandler context = new ServletContextHandler("/");
        ServletHolder holder = new ServletHolder("kiln", servlet);
        holder.setAsyncSupported(true);  // every mode reads a request's content without a thread
        context.addServlet(holder, "/*");
        // GracefulHandler lets stop() wait for requests in flight, async ones included.
        server.setHandler(new GracefulHandler(router == null ? context : new AsteriskOptions(router, context)));
    }

    /**
     * Binds and starts serving.
     *
     * @throws IOException when the address cannot be bound (port in use, address not local)
     */
    void start() throws IOException {
        try {
            server.start();
            watch = HeaderTimeouts.headsAndCap("jetty", headerTimeoutMs, connector::getConnectedEndPoints, new Probe(),
                connectionLimit.getMaxNetworkConnectionCount(), connectionLimit::getNetworkConnectionCount);
        } catch (Exception e) {
            stop(0);
            if (e instanceof IOException) throw (IOException) e;
            throw new IllegalStateException("Jetty failed to start: " + e, e);
        }
    }

    /** @return the bound port (the real one when started with port 0) */
    @Override
    public int port() {
        return connector.getLocalPort();
    }

    /**
     * Stops accepting, waits up to {@code graceMillis} for requests in flight (workers and timer
     * keep running meanwhile, so queued and waiting requests can finish), then stops the workers.
     * The database stays open: the caller closes it afterwards.
     */
    @Override
    public void stop(long graceMillis) {
        if (watch != null) watch.stop();
        if (deadlines != null) deadlines.stop();
        if (streams != null) streams.stop();  // open streams end now, so the grace period is for requests
        server.setStopTimeout(graceMillis);
        try {
            server.stop();
        } catch (Exception e) {
            LOG.log(Level.WARNING, "Jetty did not stop cleanly", e);
        }
        if (workerPool != null) workerPool.stop();
    }

    /** Jetty 12's view of a connection for the {@link HeaderTimeouts}. */
    private static final class Probe implements HeaderTimeouts.Probe<EndPoint> {
        @Override
        public boolean readingHead(EndPoint endPoint) {
            return endPoint.getConnection() instanceof HttpConnection http
                && http.getParser().inHeaderState() && !http.getParser().isStart();
        }

        @Override
        public long requestsBegun(EndPoint endPoint) {
            return endPoint.getConnection() instanceof HttpConnection http ? http.getMessagesIn() : 0;
        }

        @Override
        public void expire(EndPoint endPoint) {
            try {
                endPoint.write(Callback.from(endPoint::close), HeaderTimeouts.requestTimeoutResponse());
            } catch (RuntimeException e) {
                endPoint.close(); // a write already pending: just close
            }
        }
    }
}

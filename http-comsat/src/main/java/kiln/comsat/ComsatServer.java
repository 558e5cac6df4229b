package kiln.comsat;

import java.io.IOException;
import java.util.logging.Level;
import java.util.logging.Logger;

import javax.servlet.ServletException;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import kiln.server.ClientDeadlines;
import kiln.server.HeaderTimeouts;
import kiln.server.StepRouter;
import kiln.server.Launcher;
import kiln.http.Limits;
import kiln.http.Response;
import kiln.http.spi.RequestParser;
import kiln.server.OpenStreams;
import kiln.server.ServerLimits;
import kiln.server.ServerOptions;
import kiln.server.WorkerPool;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.ConnectionLimit;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConnection;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.HandlerWrapper;
import org.eclipse.jetty.server.handler.StatisticsHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * Embedded Jetty 9.4 with {@link KilnServlet} mapped to {@code /*}, serving an app's routes (a
 * {@link StepRouter}: the demo's endpoints, the board, a user's).
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>Jetty's {@link QueuedThreadPool} ({@value #MIN_THREADS}..{@value #MAX_THREADS} threads) runs
 *       one acceptor, the selectors and the parsing of requests; for each request it only starts a
 *       fiber, so it never waits on the database.</li>
 *   <li>Quasar's default fiber scheduler runs the fibers: a fork-join pool of {@code --threads}
 *       carrier threads (system property {@code co.paralleluniverse.fibers.DefaultFiberPool.parallelism},
 *       set by {@link ComsatMain}).</li>
 * </ul>
 *
 * <h2>Limits</h2>
 * As in the Jetty 12 front end: {@code --idle-timeout} is the connector's idle timeout,
 * {@code --max-connections} a {@link ConnectionLimit} (at the cap Jetty stops accepting; new
 * connections wait in the listen backlog), and a {@link HeaderTimeouts} answers 408 to a request
 * head slower than {@code --header-timeout}, which Jetty 9.4 cannot time out itself, and logs the cap.
 */
final class ComsatServer implements Launcher.Server {
    /** Heap per open connection for the default cap, bytes: about 4.3 KB per idle connection measured, with room for a request (make bench-memory). */
    private static final int HEAP_PER_CONNECTION = 8192;
    /**
     * Heap per open event stream, bytes: ./ab-sweep.sh --subscribers 20000 --vps ran a 256 MB heap
     * out of memory at 18,750 subscribers (about 13 KB each), so 16 KB.
     */
    private static final int HEAP_PER_STREAM = 16384;
    private static final Logger LOG = Logger.getLogger(ComsatServer.class.getName());
    static final int MIN_THREADS = 4;
    static final int MAX_THREADS = 32;

    private final Server server;
    private final ServerConnector connector;
    private final ConnectionLimit connectionLimit;
    private final long headerTimeoutMs;
    /** The streams being sent: ended first at a stop, so the graceful stop need not wait for them. */
    private final OpenStreams streams;
    /** The deadlines of request contents and stream writes. */
    private final ClientDeadlines deadlines;
    /** One thread that continues streamed bodies between parts, and their heartbeat timer. */
    private final WorkerPool streamWorker = new WorkerPool(1);
    private HeaderTimeouts<EndPoint> watch;

    /**
     * @param options --bind, --port and the limits
     * @param routes  the app's routes, with its metrics ({@code options.applyTo} is applied here)
     */
    ComsatServer(ServerOptions options, StepRouter routes) {
        QueuedThreadPool pool = new QueuedThreadPool(MAX_THREADS, MIN_THREADS);
        pool.setName("kiln-jetty");
        server = new Server(pool);
        server.setErrorHandler(new JettyErrors());  // bad messages, before any context is chosen

        HttpConfiguration http = new HttpConfiguration();
        // The contract's Server and Date headers are written by Responses.
        http.setSendServerVersion(false);
        http.setSendDateHeader(false);
        http.setSendXPoweredBy(false);
        // Jetty 9.4 waits for the first bytes of content before calling the servlet; the fiber reads
        // content with a ReadListener instead, so a client that declares some and sends none holds
        // only a suspended fiber until the idle timeout.
        http.setDelayDispatchUntilContent(false);
        // As in the Jetty 12 front end: no per-connection header cache (Jetty 9.4 builds a 4096-entry
        // trie for every HTTP/1.1 connection), so thousands of keep-alive connections fit a small heap.
        http.setHeaderCacheSize(0);
        connector = new ServerConnector(server, 1, 1, JettyConnections.factory(http));
        connector.setHost(options.bind);
        connector.setPort(options.port);
        connector.setAcceptQueueSize(Limits.BACKLOG);
        connector.setIdleTimeout(options.idleTimeoutMs);
        server.addConnector(connector);
        ServerLimits limits = options.limits(HEAP_PER_CONNECTION, HEAP_PER_STREAM);
        connectionLimit = new ConnectionLimit(limits.maxConnections(), connector);
        server.addBean(connectionLimit);
        headerTimeoutMs = options.headerTimeoutMs;

        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.setContextPath("/");
        context.setErrorHandler(new JettyErrors());  // errors Jetty raises inside the context
        StepRouter router = options.applyTo(routes, limits);
        deadlines = new ClientDeadlines(limits);
        streams = new OpenStreams(deadlines);
        connector.addBean(new ClientConnections(router.clients()));
        // Jetty's own count of the connector's open connections, kept by the connection limit
        router.metrics().connections(connectionLimit::getConnections);
        ServletHolder holder = new ServletHolder("kiln", new KilnServlet(router, streams, streamWorker,
            new FiberContent.Limits(router.requestMemory(), deadlines)));
        holder.setAsyncSupported(true);  // FiberHttpServlet answers from its fiber through an AsyncContext
        context.addServlet(holder, "/*");
        // StatisticsHandler counts requests in flight, async ones included, so stop() can wait for them.
        StatisticsHandler stats = new StatisticsHandler();
        stats.setHandler(new Refusals(context, options.maxContentBytes));
        server.setHandler(stats);
        server.setStopAtShutdown(false);  // ComsatMain stops it, then closes the database
    }

    /**
     * Binds and starts serving.
     *
     * @throws IOException when the address cannot be bound (port in use, address not local)
     */
    void start() throws IOException {
        try {
            server.start();
            watch = HeaderTimeouts.headsAndCap("comsat", headerTimeoutMs, connector::getConnectedEndPoints, new Probe(),
                connectionLimit.getMaxConnections(), connectionLimit::getConnections);
        } catch (IOException e) {
            stop(0);
            throw e;
        } catch (Exception e) {
            stop(0);
            throw new IllegalStateException("Jetty failed to start: " + e, e);
        }
    }

    /** @return the bound port (the real one when started with port 0) */
    @Override
    public int port() {
        return connector.getLocalPort();
    }

    /**
     * Stops accepting, waits up to {@code graceMillis} for requests in flight (their fibers keep
     * running meanwhile), then stops Jetty. The database stays open: the caller closes it afterwards.
     */
    @Override
    public void stop(long graceMillis) {
        if (watch != null) watch.stop();
        deadlines.stop();
        streams.stop();  // open streams end now, so the grace period is for requests
        server.setStopTimeout(graceMillis);
        try {
            server.stop();
        } catch (Exception e) {
            LOG.log(Level.WARNING, "Jetty did not stop cleanly", e);
        }
        streamWorker.stop();
    }

    /**
     * Applies {@link RequestParser#refuseRequest} on Jetty's thread, before a fiber is started: answers 431
     * or 413 with {@code Connection: close} without reading the content.
     */
    private static final class Refusals extends HandlerWrapper {
        /** The most content bytes accepted ({@code --max-content}). */
        private final int maxContent;

        Refusals(Handler next, int maxContent) {
            setHandler(next);
            this.maxContent = maxContent;
        }

        @Override
        public void handle(String target, Request base, HttpServletRequest request, HttpServletResponse response)
            throws IOException, ServletException {
            String length = base.getHeader("Content-Length"); // Jetty has rejected a malformed or overflowing one
            java.util.List<String> codings = java.util.Collections.list(base.getHeaders("Transfer-Encoding"));
            Response refusal = RequestParser.refuseRequest(base.getHttpFields().size(), length == null ? -1 : Long.parseLong(length.trim()),
                codings.isEmpty() ? null : String.join(",", codings), base.getHeader("Host"), maxContent);
            if (refusal == null) {
                // Comsat hands the fiber a Servlet 3.0 wrapper of the request: the fiber reaches Jetty's own
                // request (its async I/O, fields and client address) through this attribute
                base.setAttribute(KilnServlet.BASE_REQUEST, base);
                super.handle(target, base, request, response);
                return;
            }
            base.setHandled(true);
            Responses.sendAndClose(request, base.getResponse(), refusal);
        }
    }

    /** Jetty 9.4's view of a connection for the {@link HeaderTimeouts}. */
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

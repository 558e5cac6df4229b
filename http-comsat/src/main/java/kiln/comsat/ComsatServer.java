package kiln.comsat;

import java.io.IOException;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.app.DemoDb;
import kiln.app.Launcher;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.StatisticsHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * Embedded Jetty 9.4 with {@link KilnServlet} mapped to {@code /*}.
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>Jetty's {@link QueuedThreadPool} ({@value #MIN_THREADS}..{@value #MAX_THREADS} threads) runs
 *       one acceptor, the selectors and the parsing of requests; for each request it only starts a
 *       fiber, so it never waits on the database.</li>
 *   <li>Quasar's default fiber scheduler runs the fibers: a fork-join pool of {@code --threads}
 *       carrier threads (system property {@code co.paralleluniverse.fibers.DefaultFiberPool.parallelism},
 *       set by {@link Main}).</li>
 * </ul>
 */
final class ComsatServer implements Launcher.Server {
    private static final Logger LOG = Logger.getLogger(ComsatServer.class.getName());
    /** Listen backlog: large enough for a c=1000+ ApacheBench connect burst (capped by net.core.somaxconn). */
    private static final int BACKLOG = 4096;
    static final int MIN_THREADS = 4;
    static final int MAX_THREADS = 32;

    private final Server server;
    private final ServerConnector connector;

    /**
     * @param bind address to listen on
     * @param port TCP port, 0 for any free port
     * @param demo the demo tables
     */
    ComsatServer(String bind, int port, DemoDb demo) {
        QueuedThreadPool pool = new QueuedThreadPool(MAX_THREADS, MIN_THREADS);
        pool.setName("kiln-jetty");
        server = new Server(pool);
        server.setErrorHandler(new JettyErrors());  // bad messages, before any context is chosen

        HttpConfiguration http = new HttpConfiguration();
        // The contract's Server and Date headers are written by Responses.
        http.setSendServerVersion(false);
        http.setSendDateHeader(false);
        http.setSendXPoweredBy(false);
        connector = new ServerConnector(server, 1, 1, JettyConnections.factory(http));
        connector.setHost(bind);
        connector.setPort(port);
        connector.setAcceptQueueSize(BACKLOG);
        server.addConnector(connector);

        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.setContextPath("/");
        context.setErrorHandler(new JettyErrors());  // errors Jetty raises inside the context
        ServletHolder holder = new ServletHolder("kiln", new KilnServlet(demo));
        holder.setAsyncSupported(true);  // FiberHttpServlet answers from its fiber through an AsyncContext
        context.addServlet(holder, "/*");
        // StatisticsHandler counts requests in flight, async ones included, so stop() can wait for them.
        StatisticsHandler stats = new StatisticsHandler();
        stats.setHandler(context);
        server.setHandler(stats);
        server.setStopAtShutdown(false);  // Main stops it, then closes the database
    }

    /**
     * Binds and starts serving.
     *
     * @throws IOException when the address cannot be bound (port in use, address not local)
     */
    void start() throws IOException {
        try {
            server.start();
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
        server.setStopTimeout(graceMillis);
        try {
            server.stop();
        } catch (Exception e) {
            LOG.log(Level.WARNING, "Jetty did not stop cleanly", e);
        }
    }
}

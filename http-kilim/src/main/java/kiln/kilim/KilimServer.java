package kiln.kilim;

import java.io.IOException;
import java.nio.channels.ServerSocketChannel;
import java.util.Objects;
import java.util.logging.Logger;

import kiln.db.QueryFuture;
import kiln.server.LoopClock;
import kiln.server.OwnServer;
import kiln.server.ServerLimits;

/**
 * The Kilim fiber HTTP/1.1 server: carrier threads, each a selector over its share of the
 * connections (epoll through Netty's native calls on Linux, else the JDK's NIO: {@link #transport})
 * and the runner of a fiber per busy connection among them ({@link ConnectionFiber}), and a
 * {@link Router} of handlers.
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
 *   <li>{@code kiln-selector} (carrier 0) and {@code kiln-carrier-1} .. {@code threads - 1}
 *       (default: one carrier per core in all): each polls its own connections with its own
 *       selector ({@link Poller}), starts a connection's fiber on itself when its socket becomes
 *       readable, resumes fibers paused on a socket, and between two selects runs the fibers queued
 *       to it ({@link Carriers}): a connection's requests are read, handled and answered on one
 *       thread, as in an nginx worker. Carrier 0 also accepts every connection, deals them to the
 *       carriers in turn, and fires due timers. Handlers run on the carriers and must never block
 *       (see {@link Handler}).</li>
 *   <li>{@code kiln-reaper}: once a second, half-closes connections past their idle, header or
 *       write deadline (kiln's shared {@link kiln.server.Connections}; see {@link kiln.http.spi.Connection}).</li>
 *   <li>{@code kiln-blocked-carrier-checker}: hands a carrier whose thread a fiber holds (a blocking call, a
 *       long loop) to a new thread after 20 ms, so that the selector and the carrier's other fibers
 *       go on; reports the handler after 100 ms; tells {@link #blockedProblem} after 5 s
 *       ({@link BlockedCarrierChecker}). A handed-off thread is named {@code kiln-selector (handed off)} (or
 *       {@code kiln-carrier-N (handed off)}) and ends when its fiber pauses or finishes.</li>
 * </ul>
 * Beyond {@link #maxConnections} open connections, a new connection gets a one-shot 503 and is
 * closed, so a flood cannot exhaust the process's file descriptors.
 *
 * <h2>Memory</h2>
 * An idle keep-alive connection has no fiber and no buffers: a fiber runs only while its
 * connection has bytes to read, requests to answer or responses to write, and hands the connection
 * back to the selector when a read finds nothing more; the buffers are lent from a pool meanwhile.
 * What stays is the socket, its selection key and a small {@link kiln.http.spi.Connection}. (Kilim's
 * own {@code kilim.nio} keeps a paused fiber, a mailbox and its events per connection.)
 */
public final class KilimServer extends OwnServer {
    private static final Logger LOG = Logger.getLogger(KilimServer.class.getName());

    /** How the pollers wait for sockets and read and write them ({@link #transport}). */
    public enum Transport {
        /** epoll where it is available ({@link #EPOLL}), else {@link #NIO}, saying why in the log. */
        AUTO,
        /** Linux's epoll through Netty's native calls ({@link EpollPoller}); fails to start where unavailable. */
        EPOLL,
        /** The JDK's NIO selector and channels ({@link NioPoller}): any platform. */
        NIO
    }

    private final int threads;
    private Transport transport = Transport.AUTO;
    private final Router router;
    private long blockedCarrierMs = 100;
    private long handOffMs = 20;
    private long unhealthyMs = 5_000;
    private BlockedCarrierChecker blockedCarrierChecker;
    /** One per carrier; the first owns the listening socket. */
    private Poller[] pollers;
    private Carriers carriers;

    /**
     * @param bindAddress address to listen on, e.g. "0.0.0.0" or "127.0.0.1"
     * @param port        TCP port, 0 for any free port
     * @param threads     carrier threads, >= 1
     * @param router      the handlers
     */
    public KilimServer(String bindAddress, int port, int threads, Router router) {
        super(bindAddress, port, router);
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        this.threads = threads;
        this.router = router;
        router.health().add(this::blockedProblem);
    }

    /**
     * Sets the limits: timeouts and minimum data rates, the connection cap and each client's share,
     * the most content a request may have (default {@link ServerLimits#defaults()}; the request
     * memory and the stream limits are the router's, {@link kiln.server.AbstractRouter#limits}).
     * Call before {@link #start}.
     */
    public KilimServer limits(ServerLimits limits) {
        connections.limits(limits);
        return this;
    }

    /**
     * Sets the transport (default {@link Transport#AUTO}). Call before {@link #start}.
     */
    public KilimServer transport(Transport transport) {
        this.transport = Objects.requireNonNull(transport, "transport");
        return this;
    }

    /**
     * Sets how long one fiber may run on its carrier thread without pausing before the server logs
     * what it is blocked in, once per handler (default 100 ms; 0 turns the check off). See
     * {@link BlockedCarrierChecker}. Call before {@link #start}.
     */
    public KilimServer blockedCarrierThreshold(long millis) {
        if (millis < 0) throw new IllegalArgumentException("blocked-carrier threshold must be >= 0 ms, got " + millis);
        blockedCarrierMs = millis;
        return this;
    }

    /**
     * Sets how long one fiber may hold its carrier thread without pausing before the carrier's other
     * fibers (and on the selector thread, accepting and reading) move to a new thread (default 20 ms;
     * 0: never, so the carrier's other fibers wait for it). See {@link BlockedCarrierChecker}. Call before
     * {@link #start}.
     */
    public KilimServer handOffThreshold(long millis) {
        if (millis < 0) throw new IllegalArgumentException("hand-off threshold must be >= 0 ms, got " + millis);
        handOffMs = millis;
        return this;
    }

    /**
     * Sets how long one fiber may hold a thread without pausing before {@link #blockedProblem} reports
     * it, and {@code /healthz} with it (default 5000 ms; 0: never). Call before {@link #start}.
     */
    public KilimServer unhealthyThreshold(long millis) {
        if (millis < 0) throw new IllegalArgumentException("unhealthy threshold must be >= 0 ms, got " + millis);
        unhealthyMs = millis;
        return this;
    }

    /**
     * @return null while no handler has held a thread for the unhealthy threshold; else, in one line,
     *         which handler, on which thread, for how long (checked a few times per threshold)
     */
    public String blockedProblem() {
        BlockedCarrierChecker watch = blockedCarrierChecker;
        return watch == null ? null : watch.problem();
    }

    /** @return the watch of blocked carriers, once started; for tests */
    BlockedCarrierChecker blockedCarrierWatch() {
        return blockedCarrierChecker;
    }

    /**
     * Checks that the classes this server runs were woven, binds the socket and starts accepting.
     *
     * @throws java.net.BindException when the port is in use or the address is not local
     * @throws IllegalStateException  when Kilim's weaver has not processed the classes
     */
    public void start() throws IOException {
        requireWoven(ConnectionFiber.class);
        requireWoven(Fibers.class);
        QueryFuture.refuseBlockingWhere(KilimServer::blockingRefusal);
        boolean epoll = useEpoll();
        ServerSocketChannel ssc = bind(false);
        carriers = new Carriers(threads);
        blockedCarrierChecker = new BlockedCarrierChecker(carriers, blockedCarrierMs, handOffMs, unhealthyMs);
        if (blockedCarrierChecker.tickMs > 0) {
            // read at each poll and each look of the watch: without the watch a long turn would leave it behind
            LoopClock clock = new LoopClock();
            carriers.keepClock(clock);
            connections.useClock(clock);
        }
        pollers = new Poller[threads];
        try {
            for (int i = 0; i < threads; i++) {
                ConnectionFiber.Serving serving = new ConnectionFiber.Serving(router, carriers);
                ServerSocketChannel listener = i == 0 ? ssc : null;
                pollers[i] = epoll ? new EpollPoller(serving, connections, carriers, i, listener)
                    : new NioPoller(serving, connections, carriers, i, listener);
            }
        } catch (IOException | RuntimeException e) {
            ssc.close();
            throw e;
        }
        pollers[0].dealTo(pollers);
        connections.start();
        carriers.start();
        blockedCarrierChecker.start();
    }

    /** @return whether to poll with epoll: {@link #transport} and, for {@link Transport#AUTO}, whether it can run here */
    private boolean useEpoll() {
        if (transport == Transport.NIO) return false;
        String why = EpollPoller.unavailability();
        if (why == null) return true;
        if (transport == Transport.EPOLL) throw new IllegalStateException("--transport epoll: " + why);
        LOG.info("transport: NIO, as " + why);
        return false;
    }

    /**
     * Graceful stop: closes the listening socket, lets requests in flight finish (up to
     * {@code graceMillis}), answers them with {@code Connection: close}, then stops the threads.
     */
    @Override
    public void stop(long graceMillis) {
        beginStop();
        if (pollers != null) pollers[0].wakeup();  // deregisters the listening socket, which closes it
        connections.finishStop(graceMillis);
        if (blockedCarrierChecker != null) blockedCarrierChecker.stop();
        if (pollers != null) {
            for (Poller p : pollers) p.stop();
        }
        if (carriers != null) carriers.shutdown();
    }

    /**
     * The database's guard against {@code join()} on an unfinished future in fiber code (installed at
     * {@link #start}): on a Kilim carrier thread that would block the carrier and every fiber on it.
     *
     * @return the reason to refuse the calling thread, or null on a thread that runs no fibers
     */
    private static String blockingRefusal() {
        if (!Carriers.onCarrier()) return null;
        return "in fiber code (Kilim carrier thread " + Thread.currentThread().getName() + ") would block the carrier and every fiber on it:"
            + " use Fibers.await(future), which pauses only this fiber. join() and get() are for plain threads.";
    }

    static void requireWoven(Class<?> c) {
        try {
            c.getField("$isWoven");
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(c.getName() + " was not woven by Kilim: build with 'mvn package' (the kilim"
                + " plugin weaves in process-classes; a bare 'mvn compile' or an IDE build leaves classes unwoven)");
        }
    }
}

package kiln.undertow;

import java.io.IOException;
import java.net.InetSocketAddress;

import io.undertow.Undertow;
import io.undertow.UndertowOptions;
import io.undertow.server.HttpHandler;
import io.undertow.server.handlers.GracefulShutdownHandler;
import kiln.app.AsyncEndpoints;
import kiln.app.DemoDb;
import kiln.app.Launcher;
import kiln.app.ModeOptions;
import kiln.app.WorkerPool;
import org.xnio.Options;

/**
 * Undertow serving the demo endpoints with one core {@link HttpHandler} (no servlet layer).
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>{@code --threads N}: N IO threads (XNIO selector threads; they accept connections, parse
 *       requests and write responses).</li>
 *   <li>async mode: {@link AsyncHandler} queues each exchange to {@code --workers} worker threads
 *       ({@code kiln-worker-*}); one timer thread ({@code kiln-timer}) ends {@code /hello} delays.
 *       Undertow's own worker pool stays idle.</li>
 *   <li>blocking mode: {@link BlockingHandler} dispatches each exchange to Undertow's worker pool
 *       (Undertow's default size: 8 per IO thread), where it blocks.</li>
 * </ul>
 */
final class UndertowServer implements Launcher.Server {
    /** Listen backlog: large enough for a c=1000+ ApacheBench connect burst (capped by net.core.somaxconn). */
    private static final int BACKLOG = 4096;

    private final Undertow undertow;
    private final GracefulShutdownHandler graceful;
    /** async mode only, else null */
    private final WorkerPool workerPool;

    /**
     * @param bind      address to listen on
     * @param port      TCP port, 0 for any free port
     * @param ioThreads Undertow IO threads, >= 1
     * @param mode      async (queue + workers) or blocking (worker pool, thread per request)
     * @param workers   worker threads in async mode, 1..3
     * @param demo      the demo tables
     */
    UndertowServer(String bind, int port, int ioThreads, ModeOptions.Mode mode, int workers, DemoDb demo) {
        HttpHandler handler;
        if (mode == ModeOptions.Mode.ASYNC) {
            workerPool = new WorkerPool(workers);
            handler = new AsyncHandler(workerPool.endpoints(demo), workerPool.queue());
        } else {
            workerPool = null;
            handler = new BlockingHandler(new AsyncEndpoints(demo, AsyncEndpoints.Waits.blocking()));
        }
        graceful = new GracefulShutdownHandler(handler);
        undertow = Undertow.builder()
            .addHttpListener(port, bind)
            .setIoThreads(ioThreads)
            .setSocketOption(Options.BACKLOG, BACKLOG)
            // The contract's Date header is written by Exchanges; no Connection: keep-alive on HTTP/1.1.
            .setServerOption(UndertowOptions.ALWAYS_SET_DATE, false)
            .setServerOption(UndertowOptions.ALWAYS_SET_KEEP_ALIVE, false)
            // Route on the path as sent (like the other front ends): /plain%74ext is not /plaintext.
            .setServerOption(UndertowOptions.DECODE_URL, false)
            .setHandler(graceful)
            .build();
    }

    /**
     * Binds and starts serving.
     *
     * @throws IOException when the address cannot be bound (port in use, address not local)
     */
    void start() throws IOException {
        try {
            undertow.start();
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

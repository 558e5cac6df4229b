package kiln.undertow;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;

import io.undertow.server.HttpServerExchange;
import io.undertow.server.protocol.http.HttpServerConnection;
import org.xnio.ChannelListener;
import org.xnio.conduits.ConduitStreamSourceChannel;
import org.xnio.conduits.StreamSourceConduit;

/**
 * Watches the client of a streamed response while the stream runs (Undertow 2.4, HTTP/1.x), for
 * {@link kiln.server.OpenStreams.AsyncSink#watchClient}. Undertow suspends a connection's reads
 * once it parsed a request and resumes them only when the exchange ended: a client that closed
 * its connection while its stream waits would be noticed only at a later write (the first write
 * after a FIN even succeeds), and one that sends junk never. So the watch takes the connection's
 * read listener for the length of the stream and resumes reads on its socket-level conduit (below
 * the request's own, which report the end of the content); when the socket becomes readable it
 * reads once: end of stream, a reset, or any byte at all means the client left. A stream's client
 * has nothing to send; bytes it sends anyway are dropped with the connection, not handed back to
 * Undertow as a next (pipelined) request, which is not worth its risk here.
 *
 * <p>Everything but {@link #start} and {@link #stop} runs on the exchange's IO thread, as
 * Undertow's own reads do; {@link #stop} puts Undertow's read listener back there, before the
 * exchange ends.
 *
 * <p>Cost per waiting stream: this object (40 bytes) and a read interest on the connection's
 * selection key; no buffer, no thread, no work per heartbeat. One read of one byte, on the IO
 * thread, when the socket becomes readable.
 */
final class ClientWatch implements ChannelListener<ConduitStreamSourceChannel> {
    private final HttpServerExchange exchange;
    private final Runnable left;
    // the rest on the IO thread only
    private ConduitStreamSourceChannel source;
    private StreamSourceConduit conduit;
    private ChannelListener<? super ConduitStreamSourceChannel> previous;
    private boolean watching;
    private boolean stopped;

    private ClientWatch(HttpServerExchange exchange, Runnable left) {
        this.exchange = exchange;
        this.left = left;
    }

    /**
     * Starts watching the connection of {@code exchange}, whose request was read in full; from any
     * thread. Only an HTTP/1 connection is watched (HTTP/2 reads its connection itself).
     *
     * @param left called once, on the IO thread (it must not block), when the client left; also
     *             when it had sent more than its request (Undertow read it ahead)
     * @return the watch, to {@link #stop} before the exchange ends
     */
    static ClientWatch start(HttpServerExchange exchange, Runnable left) {
        ClientWatch watch = new ClientWatch(exchange, left);
        watch.onIoThread(watch::begin);
        return watch;
    }

    private void begin() {
        if (stopped || !(exchange.getConnection() instanceof HttpServerConnection connection) || !connection.isOpen()) return;
        if (connection.getExtraBytes() != null) {  // bytes after its request, read with it
            stopped = true;
            left.run();
            return;
        }
        source = connection.getChannel().getSourceChannel();
        conduit = connection.getOriginalSourceConduit();
        previous = source.getReadListener();
        source.setReadListener(this);
        watching = true;
        conduit.resumeReads();
    }

    /** The socket is readable: one byte or more, the end of the stream, or a reset. */
    @Override
    public void handleEvent(ConduitStreamSourceChannel channel) {
        if (!watching) return;
        int n;
        try {
            n = conduit.read(ByteBuffer.allocate(1));
        } catch (IOException e) {
            n = -1;  // a reset
        }
        if (n == 0) return;  // nothing to read after all: reads stay resumed
        stopNow();
        left.run();
    }

    private void stopNow() {
        stopped = true;
        if (!watching) return;
        watching = false;
        conduit.suspendReads();
        source.setReadListener(previous);
    }

    /**
     * Stops watching, then runs {@code then} (ending the exchange), both on the IO thread, so that
     * no read of the watch's comes after; from any thread.
     */
    void stop(Runnable then) {
        onIoThread(() -> {
            stopNow();
            then.run();
        });
    }

    /** Stops watching, and returns once it did: for a worker thread that ends the exchange next. */
    void stopAndWait() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        stop(() -> done.complete(null));
        done.join();
    }

    private void onIoThread(Runnable task) {
        try {
            exchange.getIoThread().execute(task);
        } catch (RejectedExecutionException e) {
            task.run();  // the IO thread has stopped: nothing reads the connection any more
        }
    }
}

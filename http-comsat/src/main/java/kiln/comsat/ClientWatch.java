package kiln.comsat;

import java.io.IOException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeoutException;

import org.eclipse.jetty.io.AbstractEndPoint;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.HttpConnection;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.BufferUtil;
import org.eclipse.jetty.util.Callback;

/**
 * Watches the client of a streamed reply while the stream runs (Jetty 9.4 under Comsat, HTTP/1.x),
 * for {@link kiln.server.OpenStreams.AsyncSink#watchClient}: the Jetty 12 front end's watch, on
 * Jetty 9.4's classes. Jetty reads a connection only to parse a request, when the application
 * reads its content, and once the response completed: a client
 * that closed its connection while its stream waits would be noticed only at a later write (the
 * first write after a FIN even succeeds), and one that sends junk never. So the watch registers a
 * fill interest on the connection's endpoint itself, and when the socket becomes readable fills
 * it once: end of stream, a reset, or any byte at all means the client left. A stream's client has
 * nothing to send; bytes it sends anyway are dropped with the connection, not handed back to
 * Jetty as a next (pipelined) request, which is not worth its risk here.
 *
 * <p>Cost per waiting stream: this object (24 bytes) and the endpoint's fill interest (a read
 * interest on its selection key); no buffer, no thread, no work per heartbeat. One fill of one
 * byte, on Jetty's selector thread, when the socket becomes readable.
 *
 * <p>{@link #stop} must come before the response completes (before the request's fiber returns):
 * Jetty aborts a response that completes while a read is pending, with a warning ("Pending read in
 * onCompleted"), and a watch still registered then could take the next request's bytes. Jetty
 * 9.4's idle timeout fails the fill interest of a connection whose request waits
 * ({@code AbstractEndPoint.onIdleExpired}) and does nothing else to it: the watch registers again.
 */
final class ClientWatch implements Callback {
    private final EndPoint endPoint;
    private final Runnable left;
    /** Set by {@link #stop} or once the watch fired: it never fills the endpoint again. Guarded by this. */
    private boolean stopped;

    private ClientWatch(EndPoint endPoint, Runnable left) {
        this.endPoint = endPoint;
        this.left = left;
    }

    /**
     * Starts watching the connection of {@code request}, whose content was read in full.
     *
     * @param request Jetty's own request
     * @param left called once, on Jetty's selector thread (it must not block) or at once on this
     *             one, when the client left
     * @return the watch, to {@link #stop} before the response completes; null when there is none:
     *         not an HTTP/1 connection (HTTP/2 reads its connection itself), Jetty reads the
     *         connection already, or the client had sent more than its request (then {@code left}
     *         ran already)
     */
    static ClientWatch start(Request request, Runnable left) {
        Connection connection = request.getHttpChannel().getConnection();
        if (!(connection instanceof HttpConnection http) || !(connection.getEndPoint() instanceof AbstractEndPoint)) return null;
        if (!http.isRequestBufferEmpty()) {
            left.run();  // bytes after its request: Jetty read them with it
            return null;
        }
        ClientWatch watch = new ClientWatch(connection.getEndPoint(), left);
        return watch.endPoint.tryFillInterested(watch) ? watch : null;
    }

    /** The socket is readable: one byte or more, the end of the stream, or a reset. On Jetty's selector thread. */
    @Override
    public void succeeded() {
        synchronized (this) {
            if (stopped) return;
            int n;
            try {
                n = endPoint.fill(BufferUtil.allocate(1));
            } catch (IOException e) {
                n = -1;  // a reset
            }
            if (n == 0 && endPoint.tryFillInterested(this)) return;  // nothing to read after all: watch on
            stopped = true;
            if (n == 0) return;  // someone else reads the connection now
        }
        left.run();
    }

    /** The fill interest failed: the idle timeout (watch on), the endpoint closed, or {@link #stop}. */
    @Override
    public void failed(Throwable failure) {
        synchronized (this) {
            if (stopped) return;
            if (failure instanceof TimeoutException && endPoint.isOpen() && endPoint.tryFillInterested(this)) return;
            stopped = true;
        }
        left.run();
    }

    @Override
    public InvocationType getInvocationType() {
        return InvocationType.NON_BLOCKING;  // run on the selector thread: a fill that cannot block, and left
    }

    /** Stops watching: withdraws the fill interest, so that Jetty can complete the response and read the connection again. */
    void stop() {
        synchronized (this) {
            if (stopped) return;
            stopped = true;
            ((AbstractEndPoint) endPoint).getFillInterest().onFail(new CancellationException("the stream ended"));
        }
    }
}

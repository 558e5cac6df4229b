package kiln.kilim;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.logging.Level;
import java.util.logging.Logger;

import kilim.NotPausable;
import kilim.Pausable;
import kilim.Task;
import kilim.nio.EndPoint;
import kiln.http.Connection;
import kiln.http.HttpRequest;

/**
 * One client connection, served by one fiber for its whole life: read bytes, parse every complete
 * request in them, run each request's handler in turn (so pipelined requests are answered in
 * order), write the responses, read again. Reads and writes pause the fiber, not the carrier thread.
 *
 * <p>Everything but the waiting is kiln's shared HTTP layer ({@link Connection}: parsing, writing,
 * buffers, deadlines, error answers, HEAD); this class is the pausable loop around it. The reaper
 * half-closes an overdue socket, which wakes this fiber with end-of-stream, and the fiber closes
 * the channel itself (closing it from another thread could race with a pending selector
 * registration, which Kilim's registration fiber does not survive).
 */
final class HttpConnection extends Task<Object> {
    private static final Logger LOG = Logger.getLogger(HttpConnection.class.getName());
    /** Read attempts that yield to other fibers before asking the selector (Kilim's EndPoint does the same). */
    private static final int YIELDS_BEFORE_SELECT = 4;

    private final KilimServer server;
    private final EndPoint endpoint;
    private final SocketChannel channel;
    private final Connection connection;

    HttpConnection(KilimServer server, EndPoint endpoint) {
        this.server = server;
        this.endpoint = endpoint;
        this.channel = endpoint.dataChannel();
        this.connection = new Connection(server.registry(), channel);
    }

    /** Each run of this fiber on a carrier, until it pauses or ends, is marked for the {@link CarrierWatch}. */
    @Override
    public void run() throws NotPausable {
        CarrierWatch.Slot slot = server.carrierWatch().enter(this);
        try {
            super.run();
        } finally {
            slot.exit();
        }
    }

    /** @return the handler now running, e.g. {@code GET /todos/{id}}, for a report, or null between requests */
    String handlerName() {
        return connection.handlerName();
    }

    @Override
    public void execute() throws Pausable {
        server.registry().opened(connection);
        try {
            serve();
        } catch (EOFException e) {
            // the client closed the connection (the normal end of a keep-alive session), or a timeout did
        } catch (IOException e) {
            LOG.log(Level.FINE, "connection error", e);
        } finally {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing left to do for a socket that cannot even close
            }
            server.registry().closed(connection);
        }
    }

    private void serve() throws Pausable, IOException {
        Connection c = connection;
        while (true) {
            HttpRequest request;
            while ((request = c.next()) != null) {
                c.answer(request, server.respond(request));
                if (c.outputFull()) flush();
            }
            if (c.hasOutput()) flush();
            if (c.closing()) {
                if (c.startLinger()) {
                    while (read(c.lingerBuffer()) && c.discardedMore()) {
                        // discard what the client still sends after a refusal, then close
                    }
                }
                return;
            }
            if (!read(c.readBuffer())) {
                if (c.endOfStream()) flush();
                return;
            }
        }
    }

    /**
     * Reads at least one byte into {@code in}, pausing the fiber until the socket is readable.
     *
     * @return false at end-of-stream (the client closed, or the reaper half-closed an overdue connection)
     */
    private boolean read(ByteBuffer in) throws Pausable, IOException {
        int yields = 0;
        while (true) {
            int n = channel.read(in);
            if (n > 0) return true;
            if (n < 0) return false;
            if (++yields < YIELDS_BEFORE_SELECT) {
                Task.yield();
            } else {
                endpoint.pauseUntilReadable();
                yields = 0;
            }
        }
    }

    private void flush() throws Pausable, IOException {
        endpoint.write(connection.startWrite());
        connection.written();
    }
}

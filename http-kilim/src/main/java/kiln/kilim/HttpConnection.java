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
import kiln.app.HttpException;
import kiln.app.Reply;

/**
 * One client connection, served by one fiber for its whole life: read bytes, parse every complete
 * request in them, run each request's handler in turn (so pipelined requests are answered in
 * order), write the responses, read again. Reads and writes pause the fiber, not the carrier thread.
 *
 * <p>Buffers start small (1 KiB in, 1 KiB out) because a keep-alive sweep holds tens of thousands
 * of mostly idle connections; they grow only for large requests or responses.
 *
 * <h2>Timeouts</h2>
 * Kilim's NIO layer has none, so the connection publishes a deadline and the server's
 * {@link KilimServer reaper thread} enforces it: while waiting for a new request (idle keep-alive),
 * while a request's head and body arrive (header timeout, against slowloris), and while a response
 * is being written to a client that does not read. No deadline runs while a handler works. An
 * overdue connection is only half-closed by the reaper ({@code shutdownInput}/{@code shutdownOutput}):
 * that wakes this fiber with end-of-stream, and the fiber closes the channel itself. Closing it from
 * another thread could race with a pending selector registration, which Kilim's registration fiber
 * does not survive.
 */
final class HttpConnection extends Task<Object> {
    private static final Logger LOG = Logger.getLogger(HttpConnection.class.getName());
    private static final int INITIAL_BUFFER = 1024;
    /** Largest request the parser's limits allow, plus chunk framing; more means the parser already refused it. */
    private static final int MAX_INPUT = RequestParser.MAX_REQUEST_LINE + RequestParser.MAX_HEADER_BYTES + 2 * RequestParser.MAX_BODY;
    /** Flush pipelined responses once this many bytes are waiting. */
    private static final int FLUSH_AT = 64 * 1024;
    /** Read attempts that yield to other fibers before asking the selector (Kilim's EndPoint does the same). */
    private static final int YIELDS_BEFORE_SELECT = 4;

    /** What the current deadline guards. */
    static final int NONE = 0;
    static final int IDLE = 1;
    static final int HEADER = 2;
    static final int WRITE = 3;
    static final int LINGER = 4;

    /** A lingering close reads and discards at most this much of what the client still sends... */
    private static final long LINGER_MAX_BYTES = 1 << 20;
    /** ...for at most this long (the reaper ends it, 0-1 s later: it checks once a second). */
    private static final long LINGER_NANOS = 2_000_000_000L;

    private final KilimServer server;
    private final EndPoint endpoint;
    private final SocketChannel channel;
    /** How far the request being received has been parsed, so each read parses only what is new. */
    private final RequestParser.Progress progress = new RequestParser.Progress();
    /** System.nanoTime() after which the reaper may end the connection; meaningful when {@link #phase} != NONE. */
    private volatile long deadline;
    private volatile int phase = NONE;
    /** Set by the reaper before it half-closes the socket, so the fiber knows why it saw end-of-stream. */
    private volatile int expired = NONE;
    /** The request whose handler runs now, or null; read by the {@link CarrierWatch} for its report. */
    private HttpRequest current;

    HttpConnection(KilimServer server, EndPoint endpoint) {
        this.server = server;
        this.endpoint = endpoint;
        this.channel = endpoint.dataChannel();
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
        HttpRequest r = current;
        if (r == null) return null;
        return r.method() + " " + (r.route != null ? r.route.pattern() : r.path());
    }

    @Override
    public void execute() throws Pausable {
        ByteBuffer in = ByteBuffer.allocate(INITIAL_BUFFER);
        Output out = new Output(INITIAL_BUFFER);
        server.connectionOpened(this);
        try {
            serve(in, out);
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
            server.connectionClosed(this);
        }
    }

    private void serve(ByteBuffer in, Output out) throws Pausable, IOException {
        while (true) {
            int start = 0;
            boolean close = false;
            boolean refused = false;
            try {
                while (true) {
                    RequestParser.Parsed p = RequestParser.parse(in.array(), start, in.position(), progress);
                    if (p == null) break;
                    start += p.length;
                    phase = NONE;
                    HttpRequest request = p.request;
                    current = request;
                    Reply response = server.respond(request);
                    current = null;
                    boolean keepAlive = request.keepAlive() && !server.isStopping();
                    ResponseWriter.write(out, request.minorVersion(), response, keepAlive, "HEAD".equals(request.method()));
                    if (!keepAlive) {
                        close = true;
                        break;
                    }
                    if (out.length() >= FLUSH_AT) flush(out);
                }
                if (!close && start == 0 && !in.hasRemaining() && in.capacity() >= MAX_INPUT) {
                    throw new HttpException(431, "request larger than " + MAX_INPUT + " bytes");
                }
            } catch (HttpException e) {
                // Answer what was already parsed, then the error, then close: after a framing error the
                // next request's start is unknown (RFC 9112 section 9.6 / 11.2).
                ResponseWriter.write(out, 1, Reply.error(e.status(), e.getMessage()), false, false);
                close = true;
                refused = true;
            }
            if (out.length() > 0) flush(out);
            if (close) {
                if (refused) linger(in);
                return;
            }
            in = compact(in, start);
            if (in.position() == 0) {
                armDeadline(IDLE, server.idleTimeoutNanos());
            } else if (phase != HEADER) {
                armDeadline(HEADER, server.headerTimeoutNanos());  // the first bytes of a request are here
            }
            if (!read(in)) {
                if (expired == HEADER) {
                    // RFC 9110 section 15.5.9: tell a slow client why, then close
                    ResponseWriter.write(out, 1, Reply.error(408, "request not received within "
                        + server.headerTimeoutNanos() / 1_000_000_000L + " s"), false, false);
                    flush(out);
                }
                return;
            }
        }
    }

    /**
     * Lingering close, after refusing a request whose content the client may still be sending
     * (413 for a body over the limit, 400 for broken framing...). Closing at once with unread bytes
     * in the socket makes the kernel reset the connection, and a reset can destroy the refusal
     * before the client (or a proxy such as nginx, which then answers 502) has read it. So, as
     * RFC 9112 section 9.6 describes: shut down output (the client reads the response, then
     * end-of-stream), read and discard what still arrives, up to {@link #LINGER_MAX_BYTES} and
     * {@link #LINGER_NANOS} (the reaper half-closes input when it is over), then close.
     */
    private void linger(ByteBuffer in) throws Pausable {
        try {
            channel.shutdownOutput();
            armDeadline(LINGER, LINGER_NANOS);
            long discarded = 0;
            while (discarded < LINGER_MAX_BYTES) {
                in.clear();
                if (!read(in)) break;  // the client closed, or the reaper ended the linger
                discarded += in.position();
            }
        } catch (IOException e) {
            // the client reset the connection: nothing is left to protect
        }
    }

    /** Starts the deadline for {@code what}: the reaper ends the connection {@code nanos} from now. It never waits. */
    private void armDeadline(int what, long nanos) {
        deadline = System.nanoTime() + nanos;
        phase = what;
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

    private void flush(Output out) throws Pausable, IOException {
        int previous = phase;
        long previousDeadline = deadline;
        armDeadline(WRITE, server.idleTimeoutNanos());
        endpoint.write(out.toByteBuffer());
        out.clear(INITIAL_BUFFER);
        deadline = previousDeadline;
        phase = previous;
    }

    /**
     * Called by the reaper thread: if this connection's deadline has passed, half-close it so that
     * its fiber wakes up with end-of-stream (or a failed write) and closes it.
     *
     * @return true if the connection was expired
     */
    boolean expireIfOverdue(long now) {
        int p = phase;
        if (p == NONE || now - deadline < 0 || expired == p) return false;
        expired = p;
        try {
            channel.shutdownInput();
            // keep the write side open after a header timeout so the fiber can still send 408
            if (p != HEADER) channel.shutdownOutput();
        } catch (IOException e) {
            LOG.log(Level.FINE, "half-closing an expired connection", e);
        }
        return true;
    }

    /** Drops the consumed bytes; grows the buffer when a partial request fills it. */
    private static ByteBuffer compact(ByteBuffer in, int consumed) {
        if (consumed > 0) {
            int remaining = in.position() - consumed;
            System.arraycopy(in.array(), consumed, in.array(), 0, remaining);
            in.position(remaining);
            if (remaining == 0 && in.capacity() > INITIAL_BUFFER) return ByteBuffer.allocate(INITIAL_BUFFER);
        }
        if (!in.hasRemaining()) {
            ByteBuffer bigger = ByteBuffer.allocate(Math.min(MAX_INPUT, in.capacity() * 2));
            bigger.put(in.array(), 0, in.position());
            return bigger;
        }
        return in;
    }
}

package kiln.kilim;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import kilim.Pausable;
import kilim.PauseReason;
import kilim.Task;
import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Connection;
import kiln.http.Request;
import kiln.server.Streaming;

/**
 * The fiber that serves one connection while it has work: the {@link Poller} starts it when bytes
 * arrived on the idle connection; it parses every complete request in them, runs each
 * request's handler in turn (so pipelined requests are answered in order), writes the responses,
 * and reads again unless the last read emptied the socket. When there is nothing more to read, it
 * gives the connection's buffers back, hands the connection to the poller and ends: an idle
 * keep-alive connection has no fiber at all. Waits
 * in the middle of the work (a handler awaiting the database, a write to a client that does not
 * read, a lingering close) pause the fiber, not the carrier thread.
 *
 * <p>Everything but the waiting is kiln's shared HTTP layer ({@link Connection}: parsing, writing,
 * buffers, deadlines, error answers, HEAD); this class is the pausable loop around it. The reaper
 * half-closes an overdue socket, which makes it readable (end-of-stream) and so starts or wakes
 * this fiber, and the fiber closes the channel itself.
 */
final class ConnectionFiber extends Task<Object> implements PauseReason, Carriers.Homed {
    private static final Logger LOG = Logger.getLogger(ConnectionFiber.class.getName());
    /**
     * Turns of the carrier's run queue a fiber waits, reading after each, while other fibers are
     * queued, before its connection goes back to the selector: under load a client's next request
     * often arrives meanwhile and is served by this fiber, without the selector or a new fiber.
     */
    private static final int YIELDS_BEFORE_SELECT = 3;

    private final KilimServer server;
    /** The poller whose selector polls this connection's socket; the fiber runs on its carrier. */
    private final Poller poller;
    private final SelectionKey key;
    private final Connection connection;
    /** Set by the poller when the socket this paused fiber waits for is ready. */
    private volatile boolean ready;
    /** The bytes the poller read before starting this fiber, or null. */
    private byte[] arrived;
    /**
     * True when the last read left the socket empty, as a read that returned less than it had room
     * for did: a read right away would almost always find nothing, so there is none (one system call
     * less per request; nginx's recv does the same). On a busy carrier the fiber then waits a turn of
     * the run queue and reads; on an idle one the selector takes over.
     */
    private boolean drained;
    /** The streamed body this fiber goes on with before anything else, or null. */
    private ParkedStream resumed;

    /**
     * @param arrived the bytes the poller read before starting this fiber (no buffer is lent to a
     *                connection while it waits for a carrier), or null at end of stream
     */
    ConnectionFiber(KilimServer server, Poller poller, SelectionKey key, Connection connection, byte[] arrived) {
        this.server = server;
        this.poller = poller;
        this.key = key;
        this.connection = connection;
        this.arrived = arrived;
    }

    /** A fiber that goes on with a streamed body that waited without one ({@link ParkedStream#run}). */
    ConnectionFiber(KilimServer server, Poller poller, SelectionKey key, Connection connection, ParkedStream stream) {
        this(server, poller, key, connection, (byte[]) null);
        this.resumed = stream;
    }

    @Override
    public int home() {
        return poller.index();
    }

    /** @return the handler now running, e.g. {@code GET /todos/{id}}, for a report, or null between requests */
    String handlerName() {
        return connection.handlerName();
    }

    @Override
    public void execute() throws Pausable {
        boolean handedBack = false;
        try {
            ParkedStream stream = resumed;
            resumed = null;
            handedBack = (stream != null && !send(stream)) || serve();
        } catch (IOException e) {
            LOG.log(Level.FINE, "connection error", e);
        } finally {
            if (!handedBack) poller.close(connection);
        }
    }

    /** @return true when the connection went back to the poller to wait for its next bytes; false to close it */
    private boolean serve() throws Pausable, IOException {
        Connection c = connection;
        SocketChannel channel = c.channel();
        if (arrived != null) {
            drained = arrived.length < Poller.ARRIVED_MAX_BYTES;
            c.received(arrived);
            arrived = null;
        }
        while (true) {
            Request request;
            while ((request = c.next()) != null) {
                c.answer(request, server.respond(request));
                BodyStream body = c.takeStream();
                if (body != null) {
                    if (!startStream(body, request)) return true;  // parked: a new fiber goes on with it
                    drained = false;  // the client may have sent more while it streamed
                } else if (c.outputFull()) {
                    flush();
                }
            }
            if (c.hasOutput()) flush();
            if (c.closing()) {
                if (c.startLinger()) {
                    while (read(c.lingerBuffer()) && c.discardedMore()) {
                        // discard what the client still sends after a refusal, then close
                    }
                }
                return false;
            }
            ByteBuffer in = c.readBuffer();  // also arms the idle or header deadline
            int n = drained ? 0 : readMore(channel, in);
            for (int yields = 0; n == 0 && yields < YIELDS_BEFORE_SELECT && server.carriers().othersQueued(poller.index()); yields++) {
                c.releaseIfIdle();  // no buffer held while waiting in the carrier's run queue
                Task.yield();
                n = readMore(channel, c.readBuffer());
            }
            if (n < 0) {  // end of stream: the client closed, or the reaper half-closed an overdue connection
                if (c.endOfStream()) flush();
                return false;
            }
            if (n == 0) {
                c.releaseIfIdle();
                return poller.await(key, SelectionKey.OP_READ, c);
            }
        }
    }

    /** Reads what is there into {@code in} and notes whether that emptied the socket ({@link #drained}). */
    private int readMore(SocketChannel channel, ByteBuffer in) throws IOException {
        int room = in.remaining();
        int n = poller.read(channel, in);
        drained = n < room;
        return n;
    }

    /**
     * Starts sending a streamed body ({@link Connection#takeStream}): the head goes out, the input
     * buffer goes back to the pool, then {@link #send}.
     *
     * @return true when the stream ended (serve the connection's next request); false when it waits
     *         for its body without a fiber ({@link ParkedStream}): end this fiber
     */
    private boolean startStream(BodyStream body, Request request) throws Pausable, IOException {
        Connection c = connection;
        c.releaseInputForStream();
        flush();
        server.streamStarted();
        ParkedStream stream = new ParkedStream(server, poller, key, c, body, request.routeName().intern());  // a route's name: one string for all its streams
        c.streamStarted(stream);
        return send(stream);
    }

    /**
     * Sends a streamed body part by part: the loop of {@link Streaming#runBlocking}, except that
     * where a thread would park, this fiber ends and the stream waits without one ({@link ParkedStream}).
     *
     * @return true when the stream ended; false when it is parked (touch the connection no more)
     */
    private boolean send(ParkedStream stream) throws Pausable {
        String reason = Streaming.CLIENT;
        boolean parked = false;
        try {
            reason = sendParts(stream);
            parked = reason == null;
        } finally {
            if (!parked) {
                if (Streaming.cut(reason)) connection.abortStream();
                stream.end();
                server.streamEnded(reason);
            }
        }
        return !parked;
    }

    /** @return why the stream ended, one of {@link Streaming}'s reasons; null when it parked */
    private String sendParts(ParkedStream s) throws Pausable {
        Connection c = connection;
        BodyStream body = s.body;
        long heartbeatNanos = TimeUnit.MILLISECONDS.toNanos(body.heartbeatMillis());
        try {
            CompletableFuture<?> next = s.armed;  // what the stream waited for, if it waited
            while (true) {
                if (next == null || next.isDone()) {
                    BodyOutput part = new BodyOutput();
                    try {
                        next = body.poll(part);
                    } catch (Exception | Error e) {
                        return Streaming.failed(s.name, e);
                    }
                    if (part.length() > 0) {
                        c.appendPart(part.array(), part.length());
                        flush();
                        s.lastSent = System.nanoTime();
                    }
                    if (next == null) break;
                }
                if (c.streamStopped()) break;
                if (next.isDone()) continue;
                if (System.nanoTime() - s.lastSent >= heartbeatNanos) {
                    byte[] heartbeat = body.heartbeat();
                    if (heartbeat != null) {
                        c.appendPart(heartbeat, heartbeat.length);
                        flush();
                    }
                    s.lastSent = System.nanoTime();
                }
                if (s.park(next, s.lastSent + heartbeatNanos)) return null;
            }
            c.endStream();
            flush();
            return c.streamStopped() ? Streaming.STOP : Streaming.COMPLETE;
        } catch (IOException e) {
            return c.writeTimedOut() ? Streaming.TIMEOUT : Streaming.CLIENT;
        }
    }

    /**
     * Reads at least one byte into {@code in}, pausing the fiber until the socket is readable.
     *
     * @return false at end-of-stream (the client closed, or the reaper half-closed an overdue connection)
     */
    private boolean read(ByteBuffer in) throws Pausable, IOException {
        while (true) {
            int n = poller.read(connection.channel(), in);
            if (n > 0) return true;
            if (n < 0) return false;
            pauseUntil(SelectionKey.OP_READ);
        }
    }

    /** Writes the waiting responses, pausing the fiber while the socket's send buffer is full. */
    private void flush() throws Pausable, IOException {
        ByteBuffer bytes = connection.startWrite();
        SocketChannel channel = connection.channel();
        while (bytes.hasRemaining()) {
            if (poller.write(channel, bytes) == 0) pauseUntil(SelectionKey.OP_WRITE);
        }
        connection.written();
    }

    /** Pauses this fiber until the poller reports the socket ready for {@code op}. */
    private void pauseUntil(int op) throws Pausable, IOException {
        ready = false;
        if (!poller.await(key, op, this)) throw new IOException("server stopping");
        Task.pause(this);
    }

    /** Called by the poller: the socket is ready; resume this fiber. */
    void ready() {
        ready = true;
        resume();
    }

    /** The fiber stays paused until {@link #ready()}; Kilim checks this when the pause completes, so an early wake is not lost. */
    @Override
    public boolean isValid(Task task) {
        return !ready;
    }

}

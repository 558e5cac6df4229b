package kiln.http;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;


/**
 * One client connection's HTTP/1.1 state, shared by the front ends on kiln's own HTTP layer: the
 * input buffer and the parser's {@link RequestParser.Progress}, the output bytes, and the deadline
 * its {@link Owner}'s reaper enforces ({@code kiln.server.Connections}). Nothing here waits. A front end drives it with a loop in
 * its own way of waiting (a Kilim fiber pauses, a virtual thread blocks); the loop is the same:
 *
 * <pre>{@code
 * while (true) {
 *     Request request;
 *     while ((request = c.next()) != null) {   // every complete request read so far, in order
 *         c.answer(request, respond(request));  // runs the handler: the fiber pauses, the thread blocks
 *         if (c.outputFull()) flush(c);         // write(c.startWrite()); c.written();
 *     }
 *     if (c.hasOutput()) flush(c);
 *     if (c.closing()) return;
 *     if (read(c.readBuffer()) < 0) {           // end of stream: the client closed, or the reaper did
 *         if (c.endOfStream()) flush(c);        // a header timeout: 408 first
 *         return;
 *     }
 * }
 * }</pre>
 *
 * <p>Pipelined requests are answered in order and their responses written together (or once
 * {@value #FLUSH_AT} bytes wait). A malformed request is answered with its error status after the
 * responses to the requests before it, then the connection closes: after a framing error the next
 * request's start is unknown (RFC 9112 sections 9.6, 11.2).
 *
 * <h2>Memory</h2>
 * A keep-alive sweep holds tens of thousands of mostly idle connections, so an idle connection
 * holds little: its buffers (1 KiB in, 1 KiB out, grown only for large requests or responses) are
 * borrowed from a shared pool while a request is read or a response written, as nginx does. The
 * output buffer goes back once written; the input buffer and the parser's state go back when a
 * front end that can wait for a readable socket without a buffer calls {@link #releaseIfIdle()}
 * (Kilim's selector does; a virtual thread blocked in {@code read} holds its buffer).
 *
 * <h2>Timeouts</h2>
 * The connection publishes a deadline and the reaper thread enforces it: while waiting for a new
 * request (idle keep-alive), while a request's head and body arrive (header timeout, against
 * slowloris), and while a response is written to a client that does not read. No deadline runs
 * while a handler works. An overdue connection is only half-closed by the reaper
 * ({@code shutdownInput}/{@code shutdownOutput}): that wakes the connection's reader with
 * end-of-stream (or its writer with an error), and the connection closes the channel itself. Kilim
 * needs that (closing a channel from another thread could race with a pending selector
 * registration, which Kilim's registration fiber does not survive); a blocked virtual thread wakes
 * the same way.
 */
public final class Connection {
    private static final Logger LOG = Logger.getLogger(Connection.class.getName());
    /** Largest request the parser's limits allow, plus chunk framing; more means the parser already refused it. */
    private final int maxInput;
    /** Write pipelined responses once this many bytes are waiting. */
    private static final int FLUSH_AT = 64 * 1024;

    /** The interim response to {@code Expect: 100-continue} (RFC 9110 section 15.2.1). */
    private static final byte[] CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    /** What the current deadline guards. */
    private static final int NONE = 0;
    private static final int IDLE = 1;
    private static final int HEADER = 2;
    private static final int WRITE = 3;
    private static final int LINGER = 4;

    /** A lingering close reads and discards at most this much of what the client still sends... */
    private static final long LINGER_MAX_BYTES = 1 << 20;
    /** ...for at most this long (the reaper ends it, 0-1 s later: it checks once a second). */
    private static final long LINGER_NANOS = 2_000_000_000L;

    private final Owner server;
    private final SocketChannel channel;
    /** How far the request being received has been parsed, so each read parses only what is new; null while idle. */
    private RequestParser.Progress progress;
    /** The bytes read and not yet consumed, from position 0 to the buffer's position; null while idle. */
    private ByteBuffer in;
    private final Output out = new Output();
    /** Bytes of {@link #in} taken by requests already parsed since the last read. */
    private int consumed;
    private boolean close;
    /** The connection closes because a request was refused: its content may still be arriving. */
    private boolean refused;
    /** Bytes discarded by a lingering close so far. */
    private long discarded;
    /** System.nanoTime() after which the reaper may end the connection; meaningful when {@link #phase} != NONE. */
    private volatile long deadline;
    private volatile int phase = NONE;
    /** Set by the reaper before it half-closes the socket, so the connection knows why it saw end-of-stream. */
    private volatile int expired = NONE;
    /** The deadline a write interrupted, restored after it. */
    private int phaseBeforeWrite;
    private long deadlineBeforeWrite;
    /** The request whose handler runs now, or null; read by watchers on other threads. */
    private volatile Request current;
    /** The streamed body answered and not yet taken by the front end ({@link #takeStream}), or null. */
    private BodyStream stream;
    /** Whether the streamed body being sent is chunked (HTTP/1.1) or ends with the connection (HTTP/1.0). */
    private boolean chunked;
    /** Wakes the front end's wait in a streamed body, so it ends the stream; null while none is sent. */
    private volatile Runnable streamWake;
    private volatile boolean streamStopped;
    /** System.nanoTime() when a waiting streamed body's heartbeat is due ({@link #streamHeartbeatAt}); 0 for none. */
    private volatile long streamHeartbeatAt;

    /**
     * What a connection needs of the server that owns it: its timeouts and whether it is stopping.
     * The server's reaper calls {@link #expireIfOverdue} on its open connections.
     */
    public interface Owner {
        /** @return how long a keep-alive connection may wait for its next request, and a write may take, ns */
        long idleTimeoutNanos();

        /** @return how long a request's head and content may take to arrive once begun, ns */
        long headerTimeoutNanos();

        /** @return true once the server is stopping: responses then close their connections */
        boolean isStopping();

        /** @return the most content bytes a request may have; 413 beyond (default {@link Limits#MAX_CONTENT}) */
        default int maxContentBytes() {
            return Limits.MAX_CONTENT;
        }
    }

    /**
     * @param server  what the connection needs of its server: the timeouts, whether it is stopping
     * @param channel the accepted socket, which the reaper half-closes when overdue
     */
    public Connection(Owner server, SocketChannel channel) {
        this.server = server;
        this.channel = channel;
        this.maxInput = RequestParser.MAX_REQUEST_LINE + RequestParser.MAX_HEADER_BYTES + 2 * server.maxContentBytes();
        arm(IDLE, server.idleTimeoutNanos());  // a client that connects and never sends is reaped
    }

    /** @return the accepted socket */
    public SocketChannel channel() {
        return channel;
    }

    /**
     * @return the next complete request among the bytes read so far, or null: read more, or close
     *         when {@link #closing()}. A malformed request is not returned: its error response is
     *         appended and the connection is closing.
     */
    public Request next() {
        if (close || in == null) return null;
        try {
            RequestParser.Parsed p = RequestParser.parse(in.array(), consumed, in.position(), progress);
            if (p == null) {
                if (consumed == 0 && !in.hasRemaining() && in.capacity() >= maxInput) {
                    throw new HttpException(431, "request larger than " + maxInput + " bytes");
                }
                if (progress.takeContinue()) out.put(CONTINUE);  // written before the next read
                return null;
            }
            consumed += p.length;
            phase = NONE;
            current = p.request;
            return p.request;
        } catch (HttpException e) {
            // a refused HEAD gets the head only (RFC 9110 section 9.3.2), as every answer to a HEAD
            ResponseWriter.write(out, 1, Reply.error(e.status(), e.getMessage()), false, progress.refusedHead());
            close = true;
            refused = true;
            return null;
        }
    }

    /**
     * Appends {@code reply} to {@code request} (head only for HEAD), an error reply in the form the
     * request's {@code Accept} prefers ({@link Reply#negotiated}); the connection is closing after it
     * unless both sides keep it alive and the server is not stopping.
     */
    public void answer(Request request, Reply reply) {
        current = null;
        boolean keepAlive = request.keepAlive() && !server.isStopping();
        if (reply.status >= 400) reply = reply.negotiated(request.header("Accept"));
        boolean head = "HEAD".equals(request.method());
        if (reply.stream != null && !head) {
            stream = reply.stream;
            chunked = request.minorVersion() >= 1;
            if (!chunked) keepAlive = false;  // an HTTP/1.0 client learns the body's end from the close
        }
        ResponseWriter.write(out, request.minorVersion(), reply, keepAlive, head);
        if (!keepAlive) close = true;
    }

    /**
     * After {@link #answer}: the streamed body the reply has ({@link Reply#stream}), which the front
     * end now sends part by part, in its own way of waiting:
     * <pre>{@code
     * BodyStream body = c.takeStream();
     * if (body != null) {
     *     flush(c);                                        // the head goes out at once
     *     c.streamStarted(wake);                           // how a stop wakes the wait below
     *     while (true) {
     *         BodyOutput part = new BodyOutput();
     *         CompletableFuture<?> next = body.poll(part);
     *         c.appendPart(part); flush(c);
     *         if (next == null || c.streamStopped()) break;
     *         wait for next, at most body.heartbeatMillis(); then c.appendPart(body.heartbeat()) if silent
     *     }
     *     c.endStream(); flush(c);                         // the last chunk; the connection goes on or closes
     * }
     * }</pre>
     * No deadline runs while the body waits, only while a part is written ({@link #startWrite}).
     *
     * @return the streamed body to send, or null when the reply had none (or was to HEAD)
     */
    public BodyStream takeStream() {
        BodyStream s = stream;
        stream = null;
        return s;
    }

    /**
     * For a front end about to send a streamed body: gives the input buffer back to the pool and
     * drops the parser's state when no byte of a next request has arrived, so a subscriber waiting
     * for events holds no buffer (a pipelined next request keeps them, and is served after the stream).
     */
    public void releaseInputForStream() {
        if (in == null || in.position() != consumed) return;
        BufferPool.give(in);
        in = null;
        progress = null;
        consumed = 0;
    }

    /** @param wake wakes the front end's wait in the streamed body, so that it sees {@link #streamStopped()}; from any thread */
    public void streamStarted(Runnable wake) {
        streamWake = wake;
        if (streamStopped) wake.run();  // stopped before the wake was known
    }

    /**
     * For a front end whose streamed body waits without a thread or fiber of its own: the reaper
     * runs the stream's wake ({@link #streamStarted}) once {@code nanoTime} passes (it checks once a
     * second, so the heartbeat goes out up to a second late).
     *
     * @param nanoTime a {@link System#nanoTime()} value; 0 for none
     */
    public void streamHeartbeatAt(long nanoTime) {
        streamHeartbeatAt = nanoTime;
    }

    /** @return true when the server stops: end the streamed body now ({@link #endStream}), and the connection closes after it */
    public boolean streamStopped() {
        return streamStopped;
    }

    /** Appends one part of the streamed body (a chunk on HTTP/1.1); nothing when it is empty. */
    public void appendPart(byte[] bytes, int length) {
        ResponseWriter.part(out, bytes, 0, length, chunked);
    }

    /**
     * Ends the streamed body: the last chunk on HTTP/1.1; an HTTP/1.0 body ends with the connection.
     * The connection closes after it when the server stops.
     */
    public void endStream() {
        streamWake = null;
        streamHeartbeatAt = 0;
        if (chunked) ResponseWriter.lastChunk(out);
        if (streamStopped || server.isStopping()) close = true;
    }

    /** The streamed body failed midway: the connection closes without the last chunk, so the client sees a cut body. */
    public void abortStream() {
        streamWake = null;
        streamHeartbeatAt = 0;
        close = true;
    }

    /** @return true when a write failed because the reaper cut it: the client did not read for the idle timeout */
    public boolean writeTimedOut() {
        return expired == WRITE;
    }

    /** For a server's stop, from any thread: a streamed body being sent ends at its next step. */
    public void stopStream() {
        streamStopped = true;
        Runnable wake = streamWake;
        if (wake != null) wake.run();
    }

    /** @return true when enough pipelined output waits that it should be written before the next request */
    public boolean outputFull() {
        return out.length() >= FLUSH_AT;
    }

    /** @return true when responses wait to be written */
    public boolean hasOutput() {
        return out.length() > 0;
    }

    /** @return true when the connection must close once its output is written */
    public boolean closing() {
        return close;
    }

    /**
     * Starts writing the waiting responses: arms the write deadline (a client that does not read
     * is cut after the idle timeout). Write all of the returned bytes, then call {@link #written}.
     */
    public ByteBuffer startWrite() {
        phaseBeforeWrite = phase;
        deadlineBeforeWrite = deadline;
        arm(WRITE, server.idleTimeoutNanos());
        return out.toByteBuffer();
    }

    /** The bytes of {@link #startWrite} are written: gives their buffer back and restores the deadline they interrupted. */
    public void written() {
        out.release();
        deadline = deadlineBeforeWrite;
        phase = phaseBeforeWrite;
    }

    /**
     * Prepares the next read: drops the bytes of the requests answered, grows the buffer when a
     * partial request fills it, and arms the idle deadline (nothing of a next request yet) or the
     * header deadline (its first bytes are here; not re-armed while it arrives).
     *
     * @return the buffer to read into, with room for at least one byte
     */
    public ByteBuffer readBuffer() {
        if (in == null) {
            in = BufferPool.take();
            progress = new RequestParser.Progress(server.maxContentBytes());
        }
        in = compact(in, consumed);
        consumed = 0;
        if (in.position() == 0) {
            arm(IDLE, server.idleTimeoutNanos());
        } else if (phase != HEADER) {
            arm(HEADER, server.headerTimeoutNanos());
        }
        return in;
    }

    /**
     * Takes bytes the front end read before it had a buffer for this connection, as if
     * {@link #readBuffer()} had received them. Bytes beyond the input limit are dropped: the
     * request is refused with 431 by {@link #next()} anyway.
     */
    public void received(byte[] bytes) {
        int off = 0;
        while (off < bytes.length) {
            ByteBuffer b = readBuffer();
            int k = Math.min(b.remaining(), bytes.length - off);
            if (k == 0) return;
            b.put(bytes, off, k);
            off += k;
        }
    }

    /**
     * For a front end about to wait for its socket to become readable without holding a buffer:
     * when nothing of a next request has arrived, gives the input buffer back to the pool and drops
     * the parser's state, so the idle connection holds neither ({@link #readBuffer()} borrows them
     * again). Call after {@link #readBuffer()}, when a read found no bytes.
     *
     * @return true when the connection is idle and now holds no buffer
     */
    public boolean releaseIfIdle() {
        if (in == null) return true;
        if (in.position() != 0 || hasOutput()) return false;
        BufferPool.give(in);
        in = null;
        progress = null;
        return true;
    }

    /**
     * The read saw end-of-stream: the client closed, or the reaper half-closed an overdue connection.
     *
     * @return true when a 408 was appended because the header timeout expired (RFC 9110 section
     *         15.5.9: tell a slow client why): write it, then close
     */
    public boolean endOfStream() {
        if (expired != HEADER) return false;
        ResponseWriter.write(out, 1, Reply.error(408, "request not received within "
            + server.headerTimeoutNanos() / 1_000_000_000L + " s"), false, false);
        close = true;
        return true;
    }

    /**
     * Starts a lingering close, once the responses are written and the connection is
     * {@link #closing()} because a request was refused (413 for a body over the limit, 400 for broken
     * framing...): the client may still be sending its content, and closing with unread bytes in
     * the socket makes the kernel reset the connection, which can destroy the refusal before the
     * client, or a proxy such as nginx (which then answers 502), has read it. So, as RFC 9112
     * section 9.6 describes: output is shut down (the client reads the response, then end of
     * stream), and the front end reads and discards what still arrives into {@link #lingerBuffer()}
     * while {@link #discardedMore()} says so, up to {@value #LINGER_MAX_BYTES} bytes and 2 s (the
     * reaper half-closes input then), then closes.
     *
     * @return true when the front end should linger; false to close at once
     */
    public boolean startLinger() {
        if (!refused) return false;
        try {
            channel.shutdownOutput();
        } catch (IOException e) {
            return false;  // the client reset the connection: nothing is left to protect
        }
        arm(LINGER, LINGER_NANOS);
        discarded = 0;
        return true;
    }

    /** @return the buffer to read and discard into during a lingering close, emptied */
    public ByteBuffer lingerBuffer() {
        if (in == null) in = BufferPool.take();
        in.clear();
        return in;
    }

    /** Counts the bytes just read into {@link #lingerBuffer()}. @return true to read and discard more */
    public boolean discardedMore() {
        discarded += in.position();
        return discarded < LINGER_MAX_BYTES;
    }

    /** @return the handler now running, e.g. {@code GET /todos/{id}}, for a report, or null between requests */
    public String handlerName() {
        Request r = current;
        return r == null ? null : r.routeName();
    }

    private void arm(int what, long nanos) {
        deadline = System.nanoTime() + nanos;
        phase = what;
    }

    /**
     * Called by the reaper thread: if this connection's deadline has passed, half-close it so that
     * its reader wakes up with end-of-stream (or its writer with a failed write) and closes it.
     *
     * @return true if the connection was expired
     */
    public boolean expireIfOverdue(long now) {
        long heartbeatAt = streamHeartbeatAt;
        if (heartbeatAt != 0 && now - heartbeatAt >= 0) {
            streamHeartbeatAt = 0;
            Runnable wake = streamWake;
            if (wake != null) wake.run();
        }
        int p = phase;
        if (p == NONE || now - deadline < 0 || expired == p) return false;
        expired = p;
        try {
            channel.shutdownInput();
            // keep the write side open after a header timeout so that the 408 can still be sent
            if (p != HEADER) channel.shutdownOutput();
        } catch (IOException e) {
            LOG.log(Level.FINE, "half-closing an expired connection", e);
        }
        return true;
    }

    /** Half-closes both sides, so that the connection's loop ends: at the end of a server's stop. */
    public void end() {
        try {
            channel.shutdownInput();
            channel.shutdownOutput();
        } catch (IOException e) {
            LOG.log(Level.FINE, "half-closing a connection at stop", e);
        }
    }

    /** Drops the consumed bytes; grows the buffer when a partial request fills it (a grown buffer is not pooled). */
    private ByteBuffer compact(ByteBuffer in, int consumed) {
        if (consumed > 0) {
            int remaining = in.position() - consumed;
            System.arraycopy(in.array(), consumed, in.array(), 0, remaining);
            in.position(remaining);
            if (remaining == 0 && in.capacity() > BufferPool.BUFFER_BYTES) return BufferPool.take();
        }
        if (!in.hasRemaining()) {
            ByteBuffer bigger = ByteBuffer.allocate(Math.min(maxInput, in.capacity() * 2));
            bigger.put(in.array(), 0, in.position());
            BufferPool.give(in);
            return bigger;
        }
        return in;
    }
}

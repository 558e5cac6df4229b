package kiln.http.spi;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.HttpDate;
import kiln.http.HttpException;
import kiln.http.Limits;
import kiln.http.Response;
import kiln.http.Request;
import kiln.http.StreamEnd;


/**
 * One client connection's HTTP/1.1 life as a state machine that does no I/O (the "sans-I/O" design
 * of h11 and hyper's {@code proto::h1}): told what was read, what the handler answered, that a
 * write is done or failed, it says what to do next. Parsing, pipelining, the header, idle and write
 * deadlines, 408, 100-continue, lingering close, streamed responses with their heartbeats and stop,
 * and the counting of requests in flight and of streams live here, once. Its getters
 * ({@link #readBuffer}, {@link #output}, {@link #request}) change nothing: the commands that arm a
 * deadline or lend a buffer ({@link #prepareRead}, {@link #beginWrite}) are the loop's to call.
 * Each of kiln's own front ends is a loop that only reads, writes and waits its own way (a Kilim
 * fiber pauses, a virtual thread blocks):
 *
 * <pre>{@code
 * while (true) {
 *     switch (c.next()) {
 *         case READ   -> { c.prepareRead(); c.read(channel.read(c.readBuffer())); }  // -1 at end of stream
 *         case WRITE  -> { c.beginWrite(); write all of c.output(); c.written(); }    // a failure: c.writeFailed(e)
 *         case HANDLE -> c.respond(router.dispatch(c.request()));        // the fiber pauses, the thread blocks
 *         case WAIT   -> { if (c.park(wake)) wait until wake runs; }     // a streamed body between parts
 *         case SHUTDOWN_OUTPUT -> { channel.shutdownOutput(); c.outputShutDown(); }  // a lingering close begins
 *         case CLOSE  -> { close the channel; return; }
 *     }
 * }
 * }</pre>
 * The connection touches no socket and reads no clock of its own: the loop does what it says
 * (closing and half-closing included), the time is its owner's ({@link Owner#nanoTime}), and the
 * reaper thread half-closes the socket as {@link #expireIfOverdue} says when a deadline passes,
 * which wakes the loop's blocked read or write with end-of-stream or an error. It carries its
 * socket ({@link #socket()}) only for them. {@link #next} may be called again without a step in
 * between: it says the same. The connection's life is a table of five states ({@link State}: open,
 * closing, refused, lingering, closed) and the moves between them.
 *
 * <p>Pipelined requests are answered in order and their responses written together (or once
 * {@value #FLUSH_AT} bytes wait). A malformed request is answered with its error status after the
 * responses to the requests before it, then the connection closes: after a framing error the next
 * request's start is unknown (RFC 9112 sections 9.6, 11.2).
 *
 * <h2>Streamed responses</h2>
 * An answer with a {@link Response#stream} (to anything but HEAD) makes the connection send its body
 * part by part: {@link #next} polls the {@link BodyStream} and says {@link Action#WRITE} while parts
 * are ready, and {@link Action#WAIT} while it waits for the future the body returned. The loop then
 * {@link #park}s with a wake-up of its own; the wake-up runs once, from whichever thread sees it first: the
 * future completing, the heartbeat falling due (the reaper checks once a second), the server
 * stopping ({@link #stopStream}), or the front end's own {@link #wake} (Kilim's selector seeing the
 * client's side readable, e.g. closed). A waiting stream holds no input buffer and no deadline.
 *
 * <h2>Memory</h2>
 * A keep-alive sweep holds tens of thousands of mostly idle connections, so an idle connection
 * holds little: its buffers (1 KiB in, 1 KiB out, grown only for large requests or responses) are
 * borrowed from a shared pool while a request is read or a response written, as nginx does. The
 * output buffer goes back once written; the input buffer and the parser's state go back when a
 * front end that can wait for a readable socket without a buffer calls {@link #releaseIfIdle()}
 * (Kilim's selector does; a virtual thread blocked in {@code read} holds its buffer).
 *
 * <p>Beyond that first KiB, what a client sends is held only within the server's request memory
 * ({@link Owner#requestMemory}, a {@link MemoryBudget}): the input buffer grows (doubling, with what
 * arrives, never by what a head declares) only once the bytes are reserved, a request's content is
 * reserved until its handler answers, and a request that does not fit is answered 503 with
 * {@code Retry-After} and its connection closed. A stream's client has nothing to send: what it
 * sends waits in the first KiB (a request pipelined after the stream), and filling it ends the stream.
 *
 * <h2>Timeouts</h2>
 * The connection publishes a deadline and the reaper thread enforces it: while waiting for a new
 * request (idle keep-alive), while a request's head arrives (header timeout, against slowloris),
 * while its content arrives (the minimum request rate: each byte buys 1/rate s, and the client may
 * be at most the grace period behind; Kestrel's {@code MinRequestBodyDataRate}), and while a response
 * is written to a client that does not read (the grace period plus the bytes at the minimum response
 * rate). Slow content is answered 408. No deadline runs while a handler works or a stream waits.
 * An overdue connection is only half-closed by the reaper ({@code shutdownInput}, and
 * {@code shutdownOutput} unless a 408 is to be written: {@link #expireIfOverdue} says which): that wakes the connection's reader with
 * end-of-stream (or its writer with an error), and the connection's loop closes the channel. Kilim
 * needs that (closing a channel from another thread could race with a pending selector
 * registration, which Kilim's registration fiber does not survive); a blocked virtual thread wakes
 * the same way.
 */
public final class Connection {
    /** What the front end's loop does next ({@link #next}). */
    public enum Action {
        /**
         * {@link #prepareRead()}, read into {@link #readBuffer()}, then {@link #read(int)}: more of a
         * request, or a lingering close's discards.
         */
        READ,
        /** {@link #beginWrite()}, write all of {@link #output()}, then {@link #written()} (or {@link #writeFailed}). */
        WRITE,
        /** Run the handler of {@link #request()}, then {@link #respond}. */
        HANDLE,
        /** A streamed body waits: {@link #park}, and when its wake-up runs (or at once when park says so), {@link #next} again. */
        WAIT,
        /**
         * A lingering close begins: shut the channel's output down, then {@link #outputShutDown()}
         * (when that fails, the client reset the connection: close it).
         */
        SHUTDOWN_OUTPUT,
        /** Close the channel: the connection is done. */
        CLOSE
    }

    /**
     * A connection's life as a whole, as h11 keeps each side's state in a table ({@code _state.py}):
     * what {@link Connection#next} may say in each state, and where each state may go.
     *
     * <pre>
     * state      next() says                     moves to
     * OPEN       READ, HANDLE, WRITE, WAIT       CLOSING: an answer without keep-alive (HTTP/1.0,
     *                                              Connection: close, a server's stop), a stopped
     *                                              stream, a 408
     *                                            REFUSED: a request refused before a handler saw it
     *                                              (400, 413, 431, 503...)
     *                                            CLOSED: end of stream with all answered, a failed
     *                                              write, a cut stream
     * CLOSING    WRITE, WAIT (a stream to 1.0)   CLOSED: all written, a failed write, a cut stream
     * REFUSED    WRITE, then SHUTDOWN_OUTPUT     LINGERING: the output is shut down ({@link Connection#outputShutDown})
     *                                            CLOSED: the client's side ended already, a failed write
     * LINGERING  READ, dropping what arrives     CLOSED: end of stream, 1 MiB dropped, or 2 s (the reaper)
     * CLOSED     CLOSE
     * </pre>
     * Within OPEN and CLOSING, what {@link Connection#next} says comes from the request at hand:
     * HANDLE while its handler runs, WRITE and WAIT while a streamed body goes on, WRITE while
     * answers wait, else READ. {@link Connection#closed()} (the loop ended) moves any state to
     * CLOSED. The client's side is one flag, {@link Connection#inputEnded}: after its end of stream,
     * what was read is answered, then CLOSED.
     */
    enum State {
        OPEN, CLOSING, REFUSED, LINGERING, CLOSED;

        /** @return true when the table above lets this state move to {@code to}; CLOSING and CLOSED may stay */
        boolean mayMoveTo(State to) {
            return switch (this) {
                case OPEN -> to == CLOSING || to == REFUSED || to == CLOSED;
                case CLOSING -> to == CLOSING || to == CLOSED;
                case REFUSED -> to == LINGERING || to == CLOSED;
                case LINGERING, CLOSED -> to == CLOSED;
            };
        }
    }

    /** What the reaper does to an overdue connection's socket ({@link #expireIfOverdue}). */
    public enum Shutdown {
        /** Nothing: no deadline has passed. */
        NONE,
        /**
         * {@code shutdownInput} only: the loop reads end-of-stream and answers 408 (a request's head
         * or content was overdue), which it can still write.
         */
        INPUT,
        /** {@code shutdownInput} and {@code shutdownOutput}: the loop's read sees end-of-stream, its write fails. */
        INPUT_AND_OUTPUT
    }

    /** Write pipelined responses once this many bytes are waiting. */
    private static final int FLUSH_AT = 64 * 1024;
    /** The interim response to {@code Expect: 100-continue} (RFC 9110 section 15.2.1). */
    private static final byte[] CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    /** What the current deadline guards, and so what the reaper does when it passes ({@link #expireIfOverdue}). */
    private enum Deadline {
        /** None runs: a handler works, a stream waits, or a write just ended. Nothing expires. */
        NONE,
        /** Waiting for a next request, nothing of it here yet (keep-alive): the idle timeout; closed without an answer. */
        IDLE,
        /** A request's head arrives (against slowloris): the header timeout, from its first bytes; 408. */
        HEADER,
        /** A request's head is in and its content arrives: the minimum request rate after its grace; 408. */
        CONTENT,
        /** A write to a client that may not read: the grace plus its bytes at the minimum response rate; cut. */
        WRITE,
        /** A lingering close reads and drops what still arrives: 2 s; closed. */
        LINGER;

        /** @return what the reaper shuts down when this deadline passes: the input only when a 408 is to be written */
        Shutdown shutdown() {
            return this == HEADER || this == CONTENT ? Shutdown.INPUT : Shutdown.INPUT_AND_OUTPUT;
        }
    }

    /** A lingering close reads and discards at most this much of what the client still sends... */
    private static final int LINGER_MAX_BYTES = 1 << 20;
    /** ...for at most this long, ns (the reaper ends it, 0-1 s later: it checks once a second). */
    private static final long LINGER_NANOS = 2_000_000_000L;

    private final Owner owner;
    private final ClientSocket socket;
    private final InetSocketAddress remote;
    /**
     * Bytes reserved for request content held outside {@link #in}: chunked content the parser copied
     * so far, then the parsed request's content until its handler answers.
     */
    private int contentCharge;

    /** How far the request being received has been parsed, so each read parses only what is new; null while idle. */
    private RequestParser.Progress progress;
    /** The bytes read and not yet consumed, from position 0 to the buffer's position; null while idle. */
    private ByteBuffer in;
    /** Bytes of {@link #in} taken by requests already parsed since the last read. */
    private int consumed;
    /** Every byte read so far was parsed and no request is complete: parse again only after a read. */
    private boolean needInput;
    /** Where its read and write buffers come from: its owner's. */
    private final BufferPool buffers;
    private final Output out;
    /** The bytes of the write under way ({@link #beginWrite}), or null. */
    private ByteBuffer writing;
    /** Where the connection is in its life; it moves only as {@link State#mayMoveTo} allows ({@link #moveTo}). */
    private State state = State.OPEN;
    /** The client's side ended (end of stream): answer what was read, then close. */
    private boolean inputEnded;
    /** Bytes discarded by a lingering close so far (at most {@value #LINGER_MAX_BYTES}). */
    private int discarded;
    /**
     * Requests answered whose answers wait in {@link #out}: still in flight for a graceful stop until
     * written ({@link #written}), or until the connection gives them up ({@link #closed}).
     */
    private int unwritten;

    /** The request whose handler is to run or runs now ({@link Action#HANDLE}), or null; volatile for {@link #handlerName}. */
    private volatile Request pending;

    /** {@link Owner#nanoTime()} after which the reaper may end the connection; meaningful when {@link #phase} is not NONE. */
    private volatile long deadline;
    private volatile Deadline phase = Deadline.NONE;
    /** Set by the reaper before it half-closes the socket, so the connection knows why it saw end-of-stream. */
    private volatile Deadline expired = Deadline.NONE;

    /** The streamed body being sent, or null. */
    private volatile StreamedBody sending;
    /** Whether it is sent chunked (HTTP/1.1) or ends with the connection (HTTP/1.0). */
    private boolean chunked;
    /** Set by a server's stop: a streamed body ends at its next step, one begun later at once. */
    private volatile boolean streamStopped;

    /**
     * What a connection needs of the server that owns it: its timeouts and whether it is stopping,
     * and where it reports requests and streams (counted once here, for every front end on kiln's
     * own layer). The server's reaper calls {@link #expireIfOverdue} on its open connections.
     */
    public interface Owner {
        /**
         * @return now on the clock every deadline is kept by, ns: {@link System#nanoTime()}, a clock
         *         read once per turn of the server's loop (which may lag it a little, never lead it),
         *         or a test's fake clock; the reaper passes {@link System#nanoTime()} (or the fake
         *         clock's time) to {@link #expireIfOverdue}
         */
        default long nanoTime() {
            return System.nanoTime();
        }

        /** @return the {@code Date} header's value now, 29 ASCII bytes: {@link HttpDate#nowAscii()}, or the loop's clock's */
        default byte[] date() {
            return HttpDate.nowAscii();
        }

        /** @return where the connection borrows its buffers, and gives them back: the process's shared pool, or a test's */
        default BufferPool buffers() {
            return SharedBufferPool.SHARED;
        }

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

        /**
         * @return the server's request memory, from which a connection reserves every byte of a request
         *         it buffers beyond its first KiB (default: no limit); a request that does not fit is 503
         */
        default MemoryBudget requestMemory() {
            return MemoryBudget.UNLIMITED;
        }

        /**
         * @return the least rate, bytes/s, at which a request's content must arrive once its head is in,
         *         or 0 for none (the header timeout then bounds head and content together)
         */
        default long minRequestRate() {
            return 0;
        }

        /**
         * @return the least rate, bytes/s, at which a response must be written to a client that does not
         *         read, or 0 for none (the idle timeout then bounds each write)
         */
        default long minResponseRate() {
            return 0;
        }

        /** @return how far behind a minimum rate a client may fall before it is cut, ns (Kestrel's grace period) */
        default long rateGraceNanos() {
            return 5_000_000_000L;
        }

        /** A request is to be handled: a graceful stop waits until {@link #requestEnded}. */
        default void requestStarted() {
        }

        /**
         * The request's answer is written (a streamed body's last chunk, when it streams), or given up
         * because the connection closes: a stop may end the connection now without cutting it.
         */
        default void requestEnded() {
        }

        /**
         * A request was refused before it could be routed (400, 408, 413, 431...), for the access log.
         *
         * @param remote the client's address, or null
         */
        default void refused(InetSocketAddress remote, Response response) {
        }
    }

    /**
     * @param owner   what the connection needs of its server: the timeouts, whether it is stopping,
     *                where it counts requests and streams
     * @param channel the accepted socket, carried for the loop and the reaper (never used here); null in tests
     */
    public Connection(Owner owner, SocketChannel channel) {
        this(owner, ClientSocket.of(channel), null);
    }

    /**
     * @param remote the client's address (the accept loop asked the socket for it), or null when
     *               unknown: the requests then have none and a refusal is reported without it
     */
    public Connection(Owner owner, SocketChannel channel, InetSocketAddress remote) {
        this(owner, ClientSocket.of(channel), remote);
    }

    /**
     * @param socket the accepted socket, carried for the loop and the reaper (never used here)
     * @param remote the client's address, or null when unknown
     */
    public Connection(Owner owner, ClientSocket socket, InetSocketAddress remote) {
        this.owner = owner;
        this.buffers = owner.buffers();
        this.out = new Output(buffers);
        this.socket = socket;
        this.remote = remote;
        arm(Deadline.IDLE, owner.idleTimeoutNanos());  // a client that connects and never sends is reaped
    }

    /** @return the accepted socket, as given: the loop's and the reaper's to (half-)close; null in tests */
    public ClientSocket socket() {
        return socket;
    }

    /** @return the accepted socket's JDK channel, for a loop that reads and writes through it; null when the socket is not one */
    public SocketChannel channel() {
        return socket == null ? null : socket.channel();
    }

    /** @return what to do next ({@link State} has what each state may say); the same again until the loop reports a step */
    public Action next() {
        if (state == State.CLOSED) return Action.CLOSE;
        if (pending != null) return Action.HANDLE;
        if (sending != null) return streamStep();
        if (out.length() >= FLUSH_AT) return Action.WRITE;
        if (state == State.OPEN && in != null && !needInput && (pending = parse()) != null) {
            owner.requestStarted();
            return Action.HANDLE;
        }
        if (out.length() > 0) return Action.WRITE;
        if (state == State.LINGERING) return Action.READ;
        if (state != State.OPEN || inputEnded) {
            // a refused client may still be sending: a lingering close, unless it closed its side already
            if (state == State.REFUSED && !inputEnded) return Action.SHUTDOWN_OUTPUT;
            moveTo(State.CLOSED);
            return Action.CLOSE;
        }
        return Action.READ;
    }

    /** @return where the connection is in its life */
    State state() {
        return state;
    }

    /** Moves to {@code to}; a move the table of {@link State} does not have is a bug, caught where assertions run (the tests). */
    private void moveTo(State to) {
        assert state.mayMoveTo(to) : state + " may not move to " + to;
        state = to;
    }

    /** @return the next complete request among the bytes read, or null: an error response when it is malformed */
    private Request parse() {
        try {
            RequestParser.Parsed p = RequestParser.parse(in.array(), consumed, in.position(), progress);
            if (p == null) {
                if (!chargeContent(progress.copiedContent()) || consumed == 0 && !in.hasRemaining() && !grow()) {
                    refuseForMemory();
                    return null;
                }
                if (progress.takeContinue()) out.put(CONTINUE);  // written before the next read
                if (progress.inContent() && phase == Deadline.HEADER && owner.minRequestRate() > 0) {
                    arm(Deadline.CONTENT, owner.rateGraceNanos());
                }
                needInput = true;
                return null;
            }
            consumed += p.length;
            phase = Deadline.NONE;
            holdContent(p.request.body().length);
            return p.request.remoteAddress(remote);
        } catch (HttpException e) {
            refuseRequest(e);
            return null;
        }
    }

    /** Answers a request the parser or the limits refused with its error status; the connection closes after a lingering close. */
    private void refuseRequest(HttpException e) {
        // a refused HEAD gets the head only (RFC 9110 section 9.3.2), as every answer to a HEAD
        refuse(Response.error(e.status(), e.getMessage()), progress.refusedHead() || progress.isHead(), State.REFUSED);
    }

    /**
     * The input buffer is full and holds no whole request: grows it (doubling, up to the largest
     * request the limits allow) if the server's request memory has room for the bigger one.
     *
     * @return false when the memory has no room
     * @throws HttpException 431 when the buffer holds the largest request allowed already
     */
    private boolean grow() {
        if (in.capacity() >= maxInput()) throw new HttpException(431, "request larger than " + maxInput() + " bytes");
        int size = Math.min(maxInput(), in.capacity() * 2);
        if (!owner.requestMemory().reserve(size)) return false;
        ByteBuffer bigger = ByteBuffer.allocate(size);
        bigger.put(in.array(), 0, in.position());
        giveBackInput();
        in = bigger;
        return true;
    }

    /**
     * @return the bytes reserved for {@link #in}: its capacity once it outgrew the pool's buffer
     *         (a grown buffer is reserved whole, {@link #grow}), else 0: a connection's first KiB is its own
     */
    private int inCharge() {
        return in != null && in.capacity() > BufferPool.BUFFER_BYTES ? in.capacity() : 0;
    }

    /** Reserves what the parser copied of a chunked body beyond what is reserved already. @return false when it does not fit */
    private boolean chargeContent(int copied) {
        if (copied <= contentCharge) return true;
        if (!owner.requestMemory().reserve(copied - contentCharge)) return false;
        contentCharge = copied;
        return true;
    }

    /**
     * A request was parsed: its content now lives in its own array until the handler answers. When
     * the input buffer had grown, the bytes after the request move to a buffer of their size and the
     * reservation shrinks to the content and that buffer; a request that fit the pool's buffer holds
     * nothing reserved.
     */
    private void holdContent(int length) {
        int held = inCharge() + contentCharge;
        if (held == 0) return;
        if (inCharge() > 0) {
            int remaining = in.position() - consumed;
            ByteBuffer rest = remaining <= BufferPool.BUFFER_BYTES ? buffers.take() : ByteBuffer.allocate(remaining);
            rest.put(in.array(), consumed, remaining);
            in = rest;  // reserved at its capacity when it is not the pool's
            consumed = 0;
        }
        contentCharge = Math.min(length, held - inCharge());
        owner.requestMemory().release(held - inCharge() - contentCharge);
    }

    /** The server's request memory has no room for this request: 503 with Retry-After, and the connection closes. */
    private void refuseForMemory() {
        refuse(Response.unavailable("the server holds as many request bytes as it may (--max-request-memory); retry shortly"),
            progress.isHead(), State.REFUSED);
    }

    /**
     * Answers {@code error} in place of a request and reads no more: {@code then} is REFUSED when the
     * client may still be sending (a lingering close follows), CLOSING when its side ended.
     */
    private void refuse(Response error, boolean head, State then) {
        ResponseWriter.write(out, 1, error, false, head, owner.date());
        moveTo(then);
        owner.refused(remote, error);
    }

    /** @return the request whose handler is to run ({@link Action#HANDLE}) */
    public Request request() {
        return pending;
    }

    /**
     * The handler of {@link #request()} answered {@code response} (through the router, which put an
     * error in the form the request's {@code Accept} prefers): appends it, head only for HEAD. The
     * connection closes after it unless both sides keep it alive and the server is not stopping; a
     * streamed response's body follows ({@link Action#WAIT} and {@link Action#WRITE}).
     */
    public void respond(Response response) {
        Request request = pending;
        pending = null;
        releaseContent();
        boolean keepAlive = request.keepAlive() && !owner.isStopping();
        boolean head = "HEAD".equals(request.method());
        if (response.stream != null && !head) {
            chunked = request.minorVersion() >= 1;
            if (!chunked) keepAlive = false;  // an HTTP/1.0 client learns the body's end from the close
            startStream(response.stream, request.routeName());
        }
        ResponseWriter.write(out, request.minorVersion(), response, keepAlive, head, owner.date());
        if (!keepAlive) moveTo(State.CLOSING);
        if (sending == null) unwritten++;  // a streamed body carries the request on until it ends
    }

    private void startStream(BodyStream body, String name) {
        StreamedBody s = new StreamedBody(body, name.intern(), owner::nanoTime);  // a route's name: one string for all its streams
        sending = s;  // still in flight: a graceful stop waits for the stream to end (it wakes it first)
        if (in != null && in.position() == consumed) releaseInput();  // a waiting subscriber holds no buffer
        if (streamStopped) s.stop();
    }

    /** The streamed body's next step: write what is ready, a part or a heartbeat; wait; or end. */
    private Action streamStep() {
        if (out.length() > 0) return Action.WRITE;
        BodyOutput part = new BodyOutput();
        switch (sending.next(part)) {
            case PART -> {
                ResponseWriter.part(out, part.array(), 0, part.length(), chunked);
                return Action.WRITE;
            }
            case WAIT -> {
                return Action.WAIT;
            }
            default -> {
                endStream(sending.reason());
                return next();
            }
        }
    }

    /** Ends the streamed body: the last chunk unless it was cut; the connection closes after a cut or a stop. */
    private void endStream(String reason) {
        StreamedBody s = sending;
        sending = null;
        s.end(reason);
        if (StreamEnd.cut(reason)) {
            out.release();  // a cut body: close without writing what may wait
            moveTo(State.CLOSED);
            owner.requestEnded();
        } else {
            if (chunked) ResponseWriter.lastChunk(out);
            if (reason.equals(StreamEnd.STOP) || owner.isStopping()) moveTo(State.CLOSING);
            unwritten++;  // ends once its last chunk is written
        }
    }

    /**
     * For {@link Action#WAIT}: waits for the streamed body without the loop's thread or fiber
     * ({@link StreamedBody#park}). The loop's {@code wake} runs once, from any thread, when there
     * may be work: the body's future completed, the heartbeat fell due (the reaper checks once a
     * second), the server stops, or {@link #wake()} was called.
     *
     * @return true when parked: the loop must not touch the connection until {@code wake} runs;
     *         false when there is work already: call {@link #next} at once (wake will not run)
     */
    public boolean park(Runnable wake) {
        return sending.park(wake);
    }

    /** From any thread: runs the parked loop's wake-up ({@link #park}), once; nothing when none is parked. */
    public void wake() {
        StreamedBody s = sending;
        if (s != null) s.wake();
    }

    /** For a server's stop, from any thread: a streamed body being sent ends at its next step. */
    public void stopStream() {
        streamStopped = true;
        StreamedBody s = sending;
        if (s != null) s.stop();
    }

    /**
     * For {@link Action#WRITE}: starts writing what waits in the output ({@link #output()}) and arms
     * the write deadline, by which a client that does not read is cut: the grace period plus the
     * time the bytes take at the minimum response rate (Kestrel's {@code MinResponseDataRate}), or
     * the idle timeout when there is no minimum rate. Write all of {@link #output()}, then call
     * {@link #written} (or {@link #writeFailed}).
     */
    public void beginWrite() {
        long rate = owner.minResponseRate();
        arm(Deadline.WRITE, rate > 0 ? owner.rateGraceNanos() + out.length() * 1_000_000_000L / rate : owner.idleTimeoutNanos());
        writing = out.toByteBuffer();
    }

    /**
     * @return the bytes of the write {@link #beginWrite()} began, positioned on what is left of them
     *         (the loop writes from it), or null when no write is under way
     */
    public ByteBuffer output() {
        return writing;
    }

    /**
     * The bytes of {@link #output()} are written: gives their buffer back. No deadline runs until the
     * next read arms one for what it waits for ({@link #prepareRead()}); a request whose head was
     * arriving gets its header timeout afresh.
     */
    public void written() {
        writing = null;
        out.release();
        phase = Deadline.NONE;
        endUnwritten();
    }

    /** The answers that waited in {@link #out} are written or given up: their requests end. */
    private void endUnwritten() {
        for (; unwritten > 0; unwritten--) owner.requestEnded();
    }

    /** A write failed (the client went away, or the reaper cut a client that did not read): the connection closes. */
    public void writeFailed(IOException failure) {
        writing = null;
        out.release();
        if (sending != null) endStream(expired == Deadline.WRITE ? StreamEnd.TIMEOUT : StreamEnd.CLIENT);
        endUnwritten();
        moveTo(State.CLOSED);
    }

    /**
     * For {@link Action#READ}, before each read: borrows the input buffer if the connection holds
     * none, drops the bytes of the requests answered, and arms the idle deadline (nothing of a next
     * request yet; once, from when the connection fell idle), the header deadline (its first bytes
     * are here; not re-armed while it arrives) or the content's minimum rate. During a lingering
     * close, empties the buffer to discard into. Then read into {@link #readBuffer()}.
     */
    public void prepareRead() {
        if (in == null) {
            in = buffers.take();
            progress = new RequestParser.Progress(owner.maxContentBytes());
        }
        if (state == State.LINGERING) {
            in.clear();
            return;
        }
        compact();
        if (sending == null) {
            if (in.position() == 0) {
                // armed already when the connection fell idle: a look that finds nothing since
                // (a selector's report with no bytes behind it) does not restart it
                if (phase != Deadline.IDLE) arm(Deadline.IDLE, owner.idleTimeoutNanos());
            } else if (phase != Deadline.HEADER && phase != Deadline.CONTENT) {
                // after a 100 Continue its content is awaited: the minimum rate's grace runs from now
                if (progress.inContent() && owner.minRequestRate() > 0) {
                    arm(Deadline.CONTENT, owner.rateGraceNanos());
                } else {
                    arm(Deadline.HEADER, owner.headerTimeoutNanos());
                }
            }
        }
    }

    /**
     * @return the buffer {@link #prepareRead()} made ready, to read into at its position, with room
     *         for at least one byte; null when the connection holds none (before the first
     *         {@link #prepareRead()}, and after {@link #releaseIfIdle()})
     */
    public ByteBuffer readBuffer() {
        return in;
    }

    /**
     * Reports a read into {@link #readBuffer()}.
     *
     * @param n the bytes read; 0 for none; -1 at end of stream (the client closed, or the reaper
     *          half-closed an overdue connection): what was read is answered, then the connection
     *          closes (after a 408 when the header timeout expired, RFC 9110 section 15.5.9)
     */
    public void read(int n) {
        if (n > 0) {
            needInput = false;
            // Each byte of content buys 1/rate s; a client may be at most the grace period behind.
            if (phase == Deadline.CONTENT) {
                deadline = Math.min(owner.nanoTime() + owner.rateGraceNanos(), deadline + n * 1_000_000_000L / owner.minRequestRate());
            }
        }
        if (state == State.LINGERING) {
            discarded += Math.max(n, 0);
            if (n < 0 || discarded >= LINGER_MAX_BYTES) moveTo(State.CLOSED);
        } else if (n < 0) {
            inputEnded = true;
            if (sending != null) {
                endStream(StreamEnd.CLIENT);
            } else if (expired == Deadline.HEADER && state == State.OPEN) {
                refuse(Response.error(408, "request not received within " + owner.headerTimeoutNanos() / 1_000_000_000L + " s"), false,
                    State.CLOSING);
            } else if (expired == Deadline.CONTENT && state == State.OPEN) {
                refuse(Response.error(408, "request content arrived slower than " + owner.minRequestRate() + " bytes/s"), false,
                    State.CLOSING);
            }
        } else if (sending != null && !in.hasRemaining()) {
            // A stream's client has nothing to send: what it sends waits in the connection's first
            // buffer (a request pipelined after the stream), and a client that fills it ends the stream.
            endStream(StreamEnd.CLIENT);
        }
    }

    /**
     * Takes bytes the front end read before it had a buffer for this connection, as if reads into
     * {@link #readBuffer()} had received them, growing the buffer within the request memory. Bytes
     * beyond what it may hold are dropped: the request is refused by then (431, or 503 for want of memory).
     */
    public void received(byte[] bytes) {
        int off = 0;
        while (off < bytes.length && state == State.OPEN) {
            prepareRead();
            ByteBuffer b = in;
            if (!b.hasRemaining()) {
                try {
                    if (!grow()) {
                        refuseForMemory();
                        return;
                    }
                } catch (HttpException e) {
                    refuseRequest(e);
                    return;
                }
                b = in;
            }
            int k = Math.min(b.remaining(), bytes.length - off);
            b.put(bytes, off, k);
            off += k;
            read(k);
        }
    }

    /**
     * For a front end about to wait for its socket to become readable without holding a buffer:
     * when nothing of a next request has arrived, gives the input buffer back to the pool and drops
     * the parser's state, so the idle connection holds neither ({@link #prepareRead()} borrows them
     * again).
     */
    public void releaseIfIdle() {
        if (in != null && in.position() == consumed && out.length() == 0 && state != State.LINGERING) releaseInput();
    }

    private void releaseInput() {
        giveBackInput();
        in = null;
        progress = null;
        consumed = 0;
    }

    /** Gives {@link #in} back to the pool (a grown one to the garbage collector) and its reservation to the memory. */
    private void giveBackInput() {
        int charge = inCharge();
        buffers.give(in);
        if (charge > 0) owner.requestMemory().release(charge);
    }

    /** The handler answered (or the connection ended): the request's content is no longer held here. */
    private void releaseContent() {
        if (contentCharge > 0) owner.requestMemory().release(contentCharge);
        contentCharge = 0;
    }

    /**
     * For {@link Action#SHUTDOWN_OUTPUT}: the channel's output is shut down, and a lingering close
     * begins. It follows the responses when the connection closes because a request was refused
     * (413 for a body over the limit, 400 for broken framing...): the client may still be sending
     * its content, and closing with unread bytes in the socket makes the kernel reset the
     * connection, which can destroy the refusal before the client, or a proxy such as nginx (which
     * then answers 502), has read it. So, as RFC 9112 section 9.6 describes: output is shut down
     * (the client reads the response, then end of stream), and the loop reads and discards what
     * still arrives, up to {@value #LINGER_MAX_BYTES} bytes and 2 s (the reaper half-closes input
     * then), then closes.
     */
    public void outputShutDown() {
        if (in == null || inCharge() > 0) {
            if (in != null) giveBackInput();
            in = buffers.take();  // what is discarded needs no more room than this
        }
        arm(Deadline.LINGER, LINGER_NANOS);
        moveTo(State.LINGERING);
        discarded = 0;
    }

    /**
     * @return the handler now running, e.g. {@code GET /todos/{id}}, or the route whose streamed body is
     *         being sent, e.g. {@code GET /updates/events (its stream)} (its body's polls run the app's
     *         code too), for a report; null between requests
     */
    public String handlerName() {
        Request r = pending;
        if (r != null) return r.routeName();
        StreamedBody s = sending;
        return s == null ? null : s.name() + " (its stream)";
    }

    /** The loop ended (the channel is closed): what was open is counted as ended, a stream as the client's leaving. */
    public void closed() {
        if (sending != null) endStream(StreamEnd.CLIENT);
        if (pending != null) {
            pending = null;
            owner.requestEnded();
        }
        endUnwritten();
        releaseContent();
        if (in != null) releaseInput();
        moveTo(State.CLOSED);
    }

    /** @return the largest request the parser's limits allow, plus chunk framing: more means the parser already refused it */
    private int maxInput() {
        return RequestParser.MAX_REQUEST_LINE + RequestParser.MAX_HEADER_BYTES + 2 * owner.maxContentBytes();
    }

    /** @return the client's address, as given when the connection was made; null when unknown */
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    private void arm(Deadline what, long nanos) {
        deadline = owner.nanoTime() + nanos;
        phase = what;
    }

    /**
     * Called by the reaper thread: wakes a parked stream whose heartbeat is due, and says how to
     * half-close the socket when this connection's deadline has passed, so that its loop's reader
     * wakes up with end-of-stream (or its writer with a failed write) and closes it. A deadline
     * expires once: the same phase overdue again says {@link Shutdown#NONE}.
     *
     * @param now {@link Owner#nanoTime()}, ns
     * @return what to shut down: {@link Shutdown#INPUT} after a header or content timeout (so that
     *         the 408 can still be written), {@link Shutdown#INPUT_AND_OUTPUT} after the others,
     *         {@link Shutdown#NONE} when nothing is overdue
     */
    public Shutdown expireIfOverdue(long now) {
        StreamedBody s = sending;
        if (s != null) {
            long beat = s.heartbeatAt();
            if (beat != 0 && now - beat >= 0) s.wake();
        }
        Deadline p = phase;
        if (p == Deadline.NONE || now - deadline < 0 || expired == p) return Shutdown.NONE;
        expired = p;
        return p.shutdown();
    }

    /** Drops the consumed bytes; a grown buffer left empty goes back for one of the pool's (the parse grows it: {@link #grow}). */
    private void compact() {
        if (consumed == 0) return;
        int remaining = in.position() - consumed;
        System.arraycopy(in.array(), consumed, in.array(), 0, remaining);
        in.position(remaining);
        consumed = 0;
        if (remaining == 0 && inCharge() > 0) {
            giveBackInput();
            in = buffers.take();
        }
    }
}

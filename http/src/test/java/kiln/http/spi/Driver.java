package kiln.http.spi;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.function.Function;
import java.util.function.IntSupplier;

import kiln.http.Response;
import kiln.http.Request;

/**
 * A front end's loop over a {@link Connection}, with bytes in memory instead of a socket and the
 * owner's fake clock instead of time: how the state machine is tested without a network (as h11's
 * tests drive h11). It runs the machine until it needs input that has not been given, writes to a
 * client that does not read, waits, or closes; {@link #reap} is the reaper's turn.
 */
final class Driver {
    final TestOwner owner;
    final Connection c;
    private final Function<Request, Response> handler;
    private final ArrayDeque<byte[]> input = new ArrayDeque<>();
    private final ByteArrayOutputStream written = new ByteArrayOutputStream();
    private boolean endOfInput;
    /** The loop is in a read (it waits for input): its deadline is armed. */
    private boolean reading;
    /** Writes fail from now on, as to a client that left (or after the reaper shut the output down). */
    boolean failWrites;
    /** Writes block from now on, as to a client that does not read: {@link #run} stops at WRITE. */
    boolean stallWrites;
    /** How many bytes each write call takes (at least 1): all by default; fewer are partial writes. */
    IntSupplier writeSizes = () -> Integer.MAX_VALUE;
    /** The connection shut its output down (a lingering close): the client saw the end of the responses. */
    boolean outputShut;

    Driver(Function<Request, Response> handler) {
        this(new TestOwner(), handler);
    }

    Driver(TestOwner owner, Function<Request, Response> handler) {
        this.owner = owner;
        this.c = new Connection(owner, null);
        this.handler = handler;
    }

    /** Queues bytes as the client sends them (ISO-8859-1): one read takes at most these. */
    Driver send(String raw) {
        return send(raw.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** Queues bytes as the client sends them: one read takes at most these. */
    Driver send(byte[] raw) {
        input.add(raw);
        return this;
    }

    /** The client closes its side once the queued bytes are read. */
    Driver endInput() {
        endOfInput = true;
        return this;
    }

    /**
     * The reaper's turn at the owner's clock's time: the socket is half-closed as the connection
     * says, so a read then finds the end of the stream (what the client sent after is lost) and,
     * with the output shut, a write fails.
     *
     * @return what the connection said to shut down
     */
    Connection.Shutdown reap() {
        Connection.Shutdown s = c.expireIfOverdue(owner.nanoTime());
        if (s != Connection.Shutdown.NONE) {
            input.clear();
            endOfInput = true;
        }
        if (s == Connection.Shutdown.INPUT_AND_OUTPUT) failWrites = true;
        return s;
    }

    /** @return the action the loop stopped at: READ (no input given), WRITE (writes stall), WAIT or CLOSE */
    Connection.Action run() {
        while (true) {
            Connection.Action a = c.next();
            switch (a) {
                case READ -> {
                    if (!reading) c.prepareRead();
                    reading = true;
                    if (input.isEmpty() && !endOfInput) return a;
                    reading = false;
                    ByteBuffer b = c.readBuffer();
                    if (input.isEmpty()) {
                        c.read(-1);
                    } else {
                        byte[] next = input.poll();
                        int k = Math.min(b.remaining(), next.length);
                        b.put(next, 0, k);
                        if (k < next.length) input.addFirst(Arrays.copyOfRange(next, k, next.length));
                        c.read(k);
                    }
                }
                case WRITE -> {
                    if (c.output() == null) c.beginWrite();  // else the write the client did not read goes on
                    ByteBuffer writing = c.output();
                    if (failWrites) {
                        c.writeFailed(new IOException("Broken pipe"));
                    } else if (stallWrites) {
                        return a;
                    } else {
                        while (writing.hasRemaining()) {
                            byte[] part = new byte[Math.min(writing.remaining(), Math.max(1, writeSizes.getAsInt()))];
                            writing.get(part);
                            written.writeBytes(part);
                        }
                        c.written();
                    }
                }
                case HANDLE -> c.respond(owner.counted(c.request(), handler.apply(c.request())));
                case SHUTDOWN_OUTPUT -> {
                    outputShut = true;
                    c.outputShutDown();
                }
                case WAIT, CLOSE -> {
                    return a;
                }
            }
        }
    }

    /** @return what was written since the last call, UTF-8, {@code Date} masked */
    String takeWritten() {
        String s = written.toString(StandardCharsets.UTF_8).replaceAll("Date: [^\r]*\r\n", "");
        written.reset();
        return s;
    }
}

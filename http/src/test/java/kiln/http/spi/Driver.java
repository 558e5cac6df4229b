package kiln.http.spi;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.function.Function;

import kiln.http.Reply;
import kiln.http.Request;

/**
 * A front end's loop over a {@link Connection}, with bytes in memory instead of a socket: how the
 * state machine is tested without a network (as h11's tests drive h11). It runs the machine until
 * it needs input that has not been given, waits, or closes.
 */
final class Driver {
    final TestOwner owner;
    final Connection c;
    private final Function<Request, Reply> handler;
    private final ArrayDeque<byte[]> input = new ArrayDeque<>();
    private final ByteArrayOutputStream written = new ByteArrayOutputStream();
    private boolean endOfInput;
    /** Writes fail from now on, as to a client that left. */
    boolean failWrites;

    Driver(Function<Request, Reply> handler) {
        this(new TestOwner(), handler);
    }

    Driver(TestOwner owner, Function<Request, Reply> handler) {
        this.owner = owner;
        this.c = new Connection(owner, null);
        this.handler = handler;
    }

    /** Queues bytes as the client sends them (ISO-8859-1). */
    Driver send(String raw) {
        input.add(raw.getBytes(StandardCharsets.ISO_8859_1));
        return this;
    }

    /** The client closes its side once the queued bytes are read. */
    Driver endInput() {
        endOfInput = true;
        return this;
    }

    /** @return the action the loop stopped at: READ (no input given), WAIT or CLOSE */
    Connection.Action run() {
        while (true) {
            Connection.Action a = c.next();
            switch (a) {
                case READ -> {
                    if (input.isEmpty() && !endOfInput) return a;
                    if (input.isEmpty()) {
                        c.read(-1);
                    } else {
                        ByteBuffer b = c.readBuffer();
                        byte[] next = input.poll();
                        int k = Math.min(b.remaining(), next.length);
                        b.put(next, 0, k);
                        if (k < next.length) input.addFirst(java.util.Arrays.copyOfRange(next, k, next.length));
                        c.read(k);
                    }
                }
                case WRITE -> {
                    ByteBuffer out = c.output();
                    if (failWrites) {
                        c.writeFailed(new IOException("Broken pipe"));
                    } else {
                        byte[] bytes = new byte[out.remaining()];
                        out.get(bytes);
                        written.writeBytes(bytes);
                        c.written();
                    }
                }
                case HANDLE -> c.answer(owner.counted(c.request(), handler.apply(c.request())));
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

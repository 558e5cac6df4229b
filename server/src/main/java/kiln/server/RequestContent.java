package kiln.server;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import kiln.http.Response;
import kiln.http.spi.MemoryBudget;

/**
 * A request's content as a library front end reads it (Jetty, Undertow, Comsat), bounded as kiln's
 * own layer bounds it: the buffer grows with the bytes that arrive (doubling, never beyond the
 * declared length, never by it: a head that declares 64 KiB and sends nothing costs nothing), each
 * growth reserved from the server's request memory first, and the content must arrive at the
 * minimum data rate ({@link ClientDeadlines#content}). When the memory has no room the request is
 * answered 503 with {@code Retry-After}; when the client falls behind, 408; either way through the
 * front end's {@code refuse}, which sends the answer and closes the connection, and reading stops.
 *
 * <pre>{@code
 * RequestContent content = new RequestContent(memory, deadlines, declaredLength, response -> sendAndClose(response));
 * while (bytes arrive) if (!content.add(bytes, 0, n)) return;    // refused: stop reading
 * byte[] body = content.finish();                                // null when it was refused meanwhile
 * ... run the handler ...
 * content.release();                                             // the handler answered
 * }</pre>
 * Thread-safe: the library's reading thread adds, the reaper thread may cut, the handler's thread
 * releases; exactly one of a finish and a refusal wins.
 */
public final class RequestContent {
    private static final int READING = 0;
    private static final int DONE = 1;
    private static final int REFUSED = 2;
    /** The smallest buffer made for content that does not say how long it is... or says more. */
    private static final int FIRST_BUFFER = 1024;

    private final MemoryBudget memory;
    private final int declared;
    private final Consumer<Response> refuse;
    private final ClientDeadlines.Wait wait;
    private final AtomicInteger state = new AtomicInteger(READING);
    private byte[] bytes = new byte[0];
    private int size;
    /** Bytes reserved from {@link #memory}: the buffer's capacity while reading, the content's length once done. */
    private long reserved;

    /**
     * @param declared its Content-Length (the library refused content without one, or longer than {@code --max-content})
     * @param refuse   sends the response and closes the connection, from any thread; must not block
     */
    public RequestContent(MemoryBudget memory, ClientDeadlines deadlines, int declared, Consumer<Response> refuse) {
        this.memory = memory;
        this.declared = declared;
        this.refuse = refuse;
        this.wait = deadlines.content(() -> refuse(Response.error(408, "request content arrived slower than the minimum rate"
            + " (--min-request-rate, --min-rate-grace)")));
    }

    /**
     * Appends bytes that arrived.
     *
     * @return false when the content is refused (now, for want of memory, or earlier, for want of
     *         time): stop reading; the refusal is sent
     */
    public synchronized boolean add(byte[] b, int off, int n) {
        if (state.get() != READING) return false;
        if (size + n > bytes.length) {
            int capacity = (int) Math.min(declared, Math.max(size + n, Math.max(FIRST_BUFFER, 2L * bytes.length)));
            if (!memory.reserve(capacity - bytes.length)) {
                refuse(Response.unavailable("the server holds as many request bytes as it may (--max-request-memory); retry shortly"));
                return false;
            }
            reserved += capacity - bytes.length;
            bytes = Arrays.copyOf(bytes, capacity);
        }
        System.arraycopy(b, off, bytes, size, n);
        size += n;
        wait.received(n);
        return true;
    }

    /** @return the bytes received so far */
    public synchronized int size() {
        return size;
    }

    /**
     * All of the content is in: its deadline ends.
     *
     * @return the content; null when it was refused meanwhile (the refusal is sent)
     */
    public synchronized byte[] finish() {
        if (!state.compareAndSet(READING, DONE)) return null;
        wait.end();
        if (size < bytes.length) {
            bytes = Arrays.copyOf(bytes, size);
            memory.release(reserved - size);
            reserved = size;
        }
        return bytes;
    }

    /**
     * Gives the content's memory back: call once the handler answered, or when the request ended
     * without one (the client left). Idempotent.
     */
    public synchronized void release() {
        if (state.compareAndSet(READING, DONE)) wait.end();
        long r = reserved;
        reserved = 0;
        if (r > 0) memory.release(r);
    }

    private void refuse(Response response) {
        if (!state.compareAndSet(READING, REFUSED)) return;
        wait.end();
        refuse.accept(response);
    }
}

package kiln.http;

/**
 * The limits and constants every front end applies, in one place. kiln's own HTTP layer enforces
 * them all; the front ends on a server library configure the library with them, or check them in
 * front of it ({@code kiln.http.spi.RequestParser#refuseRequest}).
 */
public final class Limits {
    /** Longest request line, bytes; beyond it 414 when the target makes it long (RFC 9112 section 3). */
    public static final int MAX_REQUEST_LINE = 8 * 1024;
    /** Largest header section (and chunked trailer section), bytes; 431 beyond it (RFC 6585 section 5). */
    public static final int MAX_HEADER_BYTES = 16 * 1024;
    /** Largest whole request head, bytes: for a library with one limit for line and fields (Undertow). */
    public static final int MAX_HEAD_BYTES = MAX_REQUEST_LINE + MAX_HEADER_BYTES;
    /** Most header fields a request (or a chunked body's trailers) may carry; 431 beyond it. */
    public static final int MAX_HEADERS = 100;
    /**
     * Most request content accepted, bytes; 413 beyond it (RFC 9110 section 15.5.14). kiln's own
     * layer reads up to this much; the library front ends refuse chunked content unread.
     */
    public static final int MAX_CONTENT = 64 * 1024;
    /**
     * The most {@code --max-content} may raise {@link #MAX_CONTENT} to, bytes: a request's content is
     * held in memory whole, so a few of these at once are what a 1 GB box can spare.
     */
    public static final int MAX_CONTENT_CEILING = 16 * 1024 * 1024;
    /**
     * Listen backlog of every server socket: large enough for a burst of thousands of new keep-alive
     * connections (ApacheBench at c=1000+ connects them all at once); the kernel caps it at
     * {@code net.core.somaxconn}.
     */
    public static final int BACKLOG = 4096;

    private Limits() {
    }
}

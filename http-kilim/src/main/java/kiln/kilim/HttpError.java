package kiln.kilim;

/**
 * A request the server refuses before any handler runs (malformed, too large, unsupported). The
 * server answers {@link #status} with {@code Connection: close} and closes the connection, since
 * after a framing error it cannot know where the next request starts (RFC 9112 section 9.6).
 */
final class HttpError extends Exception {
    private static final long serialVersionUID = 1L;
    final int status;

    HttpError(int status, String message) {
        super(message, null, false, false);
        this.status = status;
    }
}

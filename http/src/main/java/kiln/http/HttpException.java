package kiln.http;

/**
 * The one client-error type: a request the server answers with an error status instead of 500,
 * whether a parser refused it (malformed, too large: 400, 413, 414, 431...), a parameter was wrong
 * ({@code ?delay=abc}: 400) or a handler said so ({@code throw new HttpException(404, "no such todo")}).
 * The server's failure policy ({@code kiln.server.Failures.toResponse}) turns it into
 * {@link Response#error}{@code (status, message)}.
 *
 * <p>The message becomes the response body's detail, so keep it short and free of secrets. No stack
 * trace is recorded: a client's mistake is not a server bug, and a flood of malformed requests
 * should cost no more than their bytes.
 */
public class HttpException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** The HTTP status code to answer, 400..599. */
    private final int status;

    /**
     * An error the client gets instead of the handler's response:
     * {@code throw new HttpException(404, "no todo " + id)} answers {@code 404 Not Found: no todo 7}
     * (or problem details to a client that prefers JSON); the server logs nothing of it (an access
     * log, when on, has the status).
     *
     * @param status  an HTTP error status, 400..599
     * @param message a short, client-safe explanation
     * @throws IllegalArgumentException when {@code status} is not 400..599
     */
    public HttpException(int status, String message) {
        super(message, null, false, false);
        if (status < 400 || status > 599) throw new IllegalArgumentException("error status must be 400..599, got " + status);
        this.status = status;
    }

    /** @return the HTTP status code to answer */
    public int status() {
        return status;
    }
}

package kiln.kilim;

/**
 * Thrown by a handler (or by {@link HttpRequest#param}) to answer with an error status instead of
 * 500, e.g. {@code throw new HttpException(400, "delay must be an integer")}. The message becomes
 * the response body's detail, so keep it short and free of secrets.
 */
public class HttpException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;

    /**
     * @param status  an HTTP status code, 400..599
     * @param message a short, client-safe explanation
     */
    public HttpException(int status, String message) {
        super(message);
        if (status < 400 || status > 599) throw new IllegalArgumentException("error status must be 400..599, got " + status);
        this.status = status;
    }

    /** @return the HTTP status code to answer */
    public int status() {
        return status;
    }
}

package kiln.http;

/**
 * Why a streamed body ({@link BodyStream}) ended: the {@code reason} label of
 * {@code http_streams_ended_total}, and whether its connection may go on.
 */
public final class StreamEnd {
    /** The body said it is complete ({@link BodyStream#poll} returned null). */
    public static final String COMPLETE = "complete";
    /** The client went away: a write failed, or its side of the connection closed while the stream waited. */
    public static final String CLIENT = "client";
    /** The client did not read: a write took longer than the idle timeout and was cut. */
    public static final String TIMEOUT = "timeout";
    /** The server stopped. */
    public static final String STOP = "stop";
    /** The body threw; the connection closed without the last chunk, so the client sees a cut body. */
    public static final String ERROR = "error";

    private StreamEnd() {
    }

    /**
     * @param reason why a stream ended, one of this class's reasons
     * @return true when its body was not finished ({@link #CLIENT}, {@link #TIMEOUT}, {@link #ERROR}):
     *         the connection closes without the last chunk
     */
    public static boolean cut(String reason) {
        return !reason.equals(COMPLETE) && !reason.equals(STOP);
    }
}

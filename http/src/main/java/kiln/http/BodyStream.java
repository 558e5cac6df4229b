package kiln.http;

import java.util.concurrent.CompletableFuture;

/**
 * A response body sent in parts as they come ({@link Response#stream}): a live feed, server-sent events
 * ({@link ServerSentEvents}), a long download produced on the fly. Written once, it runs on every
 * front end: the front end calls {@link #poll}, writes what it appended, waits for the future it
 * returned in its own way (a fiber pauses, a virtual thread parks), and calls it again.
 *
 * <pre>{@code
 * Response.stream(200, "text/plain", out -> {
 *     out.write("tick\n");
 *     return ticks.next();              // when to call again; null ends the body
 * });
 * }</pre>
 *
 * <h2>Rules</h2>
 * <ul>
 *   <li>{@link #poll} must not block or wait: return the future instead. Return the same future
 *       object while nothing changed (a shared "next change" future), so a front end that waits on it
 *       again after a heartbeat registers nothing new.</li>
 *   <li>The stream ends when {@link #poll} returns null (the last chunk is written and the connection
 *       goes on), when it throws (logged; the connection closes, since the body cannot be finished
 *       properly), when the client goes away (a write fails) or when the server stops (the last
 *       chunk is written, then the connection closes).</li>
 *   <li>While it waits, no deadline runs: an idle timeout does not cut a live stream. After
 *       {@link #heartbeatMillis} of silence the front end writes {@link #heartbeat()}'s bytes, which
 *       keeps proxies from timing the connection out and shows a vanished client: its write fails.</li>
 * </ul>
 */
@FunctionalInterface
public interface BodyStream {
    /**
     * Appends the parts available now to {@code out} (nothing is fine).
     *
     * @return a future that completes when there may be more to send (its result and failure are
     *         ignored: {@code poll} is called again either way), or null when the body is complete.
     *         A completed future means "poll me again now": returned 1,000 times in a row with
     *         nothing appended, the stream is ended as a busy loop (a warning names its route)
     * @throws Exception ends the stream: the front end logs it and closes the connection
     */
    CompletableFuture<?> poll(BodyOutput out) throws Exception;

    /** @return the heartbeat: the bytes to send after {@link #heartbeatMillis} without a part, or null for none (the default) */
    default byte[] heartbeat() {
        return null;
    }

    /** @return how long the body may be silent before {@link #heartbeat()}'s bytes are sent, ms (default 15,000) */
    default long heartbeatMillis() {
        return 15_000;
    }

    /**
     * The body ended, for any reason: it said it was complete, its client left or did not read, the
     * server stopped, {@link #poll} threw, or the response was never sent at all. Called at most once,
     * from the front end's thread; {@link #poll} is not called after it. By default nothing: a body
     * that holds something (a subscription, a count) lets it go here.
     *
     * @param reason one of {@link StreamEnd}'s
     */
    default void ended(String reason) {
    }
}

package kiln.server;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.db.DbException;
import kiln.http.HttpException;
import kiln.http.Response;

/**
 * The failure policy, written once for every front end: what a request that failed is answered.
 * <ul>
 *   <li>{@link HttpException}: its status and message (a client error, or a handler's choice);</li>
 *   <li>{@link DbException.Overloaded}: 503 with {@code Retry-After: 1} (the write queue is full), and
 *       likewise {@link DbException.ReadersFull} (every reader slot stayed held: the message names
 *       the limit and its flag) and {@link RejectedExecutionException} (a full pool, such as
 *       {@link BlockingPool}'s);</li>
 *   <li>{@link DbException.Fatal}: 503 naming the error (the process is about to exit for its
 *       supervisor to restart it), logged once by the database;</li>
 *   <li>{@link DbException.Unavailable}: 503 with its message (PostgreSQL is down or restarting;
 *       the server answers again once it is back), {@code Retry-After: 1}; so is its subclass
 *       {@link DbException.DeadlineExceeded} (the database did not answer within its deadline,
 *       {@code --db-deadline}), whose message says whether the write is applied: not applied,
 *       or outcome unknown;</li>
 *   <li>{@link DbException.DatabaseFull}: 507 Insufficient Storage (RFC 4918 section 11.5) with
 *       its message;</li>
 *   <li>{@link DbException.ValueTooLarge}: 413 Content Too Large (RFC 9110 section 15.5.14) with
 *       its message (a value beyond the 16 MiB a table takes);</li>
 *   <li>{@link DbException.BadContinuation}: 400 with its message (a page token the client altered,
 *       or brought from another range);</li>
 *   <li>{@link DbException.UniqueViolation}: 409 Conflict with its message (a unique index already
 *       has the key: an e-mail address taken, say; RFC 9110 section 15.5.10);</li>
 *   <li>{@link DbException.IdempotencyKeyReused}: 422 Unprocessable Content (RFC 9110 section
 *       15.5.21) with its message (an {@code Idempotency-Key} sent again with another request, as
 *       draft-ietf-httpapi-idempotency-key-header's "Error Scenarios" answer it);</li>
 *   <li>{@link DbException.BadIdempotencyKey}: 400 with its message (an empty, too long or
 *       non-ASCII idempotency key);</li>
 *   <li>{@link DbException.IndexNotReady}: 503 with its message (an index is being built at
 *       start-up; {@code Retry-After: 1});</li>
 *   <li>{@link TimeoutException}: 504 (a wait with a timeout, e.g. {@code Fibers.await(future,
 *       timeout)} on an outbound call, ran out: RFC 9110 section 15.6.5);</li>
 *   <li>anything else: 500 with a short body, and the stack trace in the server log.</li>
 * </ul>
 * {@link CompletionException} and {@link ExecutionException} wrappers are looked through.
 */
public final class Failures {
    private static final Logger LOG = Logger.getLogger(Failures.class.getName());

    private Failures() {
    }

    /**
     * @param failure what the request's handler threw, or what its awaited future failed with
     * @param request what was asked, for the log line, e.g. {@code GET /updates?queries=5}; may be null
     * @return the response to send
     */
    public static Response toResponse(Throwable failure, Object request) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof HttpException) return Response.error(((HttpException) cause).status(), cause.getMessage());
        if (cause instanceof DbException.Overloaded) return Response.unavailable("the database is overloaded; retry shortly");
        if (cause instanceof DbException.ReadersFull || cause instanceof DbException.Fatal || cause instanceof DbException.Unavailable) {
            return Response.unavailable(cause.getMessage());
        }
        if (cause instanceof DbException.DatabaseFull) return Response.error(507, cause.getMessage());
        if (cause instanceof DbException.ValueTooLarge) return Response.error(413, cause.getMessage());
        if (cause instanceof DbException.BadContinuation) return Response.error(400, cause.getMessage());
        if (cause instanceof DbException.UniqueViolation) return Response.error(409, cause.getMessage());
        if (cause instanceof DbException.IdempotencyKeyReused) return Response.error(422, cause.getMessage());
        if (cause instanceof DbException.BadIdempotencyKey) return Response.error(400, cause.getMessage());
        if (cause instanceof DbException.IndexNotReady) return Response.unavailable(cause.getMessage());
        if (cause instanceof RejectedExecutionException) return Response.unavailable("the server is overloaded; retry shortly");
        if (cause instanceof TimeoutException) return Response.error(504, "gateway timeout: " + cause.getMessage());
        LOG.log(Level.SEVERE, "request failed" + (request == null ? "" : ": " + request), cause);
        return Response.internalError();
    }
}

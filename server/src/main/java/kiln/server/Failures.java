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
 * A database error is answered with its {@link DbException#clientMessage} (what went wrong in the
 * client's terms: never a table, index, row, host or path); its full message goes to the log.
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
 *   <li>{@link DbException.UniqueViolation}: 409 Conflict, "'ada@example.org' is already taken"
 *       (a unique index already has the key; RFC 9110 section 15.5.10);</li>
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
    /** A server-side database error is logged at WARNING at most once per this many ms per kind. */
    private static final long QUIET_MS = 10_000;
    private static final java.util.concurrent.ConcurrentHashMap<Class<?>, Long> LAST_WARNED = new java.util.concurrent.ConcurrentHashMap<>();

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
        if (cause instanceof DbException) {
            DbException e = (DbException) cause;
            int status = statusOf(e);
            if (status != 0) {
                logDetails(status, e, request);
                String told = e.clientMessage();
                return status == 503 ? Response.unavailable(told) : Response.error(status, told);
            }
        }
        if (cause instanceof RejectedExecutionException) return Response.unavailable("the server is overloaded; retry shortly");
        if (cause instanceof TimeoutException) return Response.error(504, "gateway timeout: " + cause.getMessage());
        LOG.log(Level.SEVERE, "request failed" + (request == null ? "" : ": " + request), cause);
        return Response.internalError();
    }

    /** @return the status a database error is answered with, or 0 for one that is a 500 */
    private static int statusOf(DbException e) {
        if (e instanceof DbException.Overloaded || e instanceof DbException.ReadersFull || e instanceof DbException.Fatal
            || e instanceof DbException.Unavailable || e instanceof DbException.IndexNotReady) {
            return 503;
        }
        if (e instanceof DbException.DatabaseFull) return 507;
        if (e instanceof DbException.ValueTooLarge) return 413;
        if (e instanceof DbException.BadContinuation || e instanceof DbException.BadIdempotencyKey) return 400;
        if (e instanceof DbException.UniqueViolation) return 409;
        if (e instanceof DbException.IdempotencyKeyReused) return 422;
        return 0;
    }

    /**
     * The details the client is not told ({@link DbException#getMessage}: tables, indexes, rows,
     * hosts) go to the log: a client's error (4xx) at FINE, the server's condition (503, 507) at
     * WARNING, at most once per {@value #QUIET_MS} ms per kind of error, so that an outage writes a
     * line, not a line per request.
     */
    private static void logDetails(int status, DbException e, Object request) {
        String line = status + " to " + (request == null ? "a request" : request) + ": " + e.getMessage();
        if (status < 500) {
            LOG.fine(line);
            return;
        }
        long now = System.currentTimeMillis();
        Long last = LAST_WARNED.get(e.getClass());
        if (last != null && now - last < QUIET_MS) {
            LOG.fine(line);
        } else if (LAST_WARNED.put(e.getClass(), now) == last) {  // no other thread warned meanwhile
            LOG.warning(line + " (like errors are logged at FINE for " + QUIET_MS / 1000 + " s)");
        }
    }
}

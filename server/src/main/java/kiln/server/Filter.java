package kiln.server;

import java.net.InetSocketAddress;

import kiln.http.Response;
import kiln.http.Request;

/**
 * Middleware: a cross-cutting concern (CORS, an access log, a request id, authentication) that a
 * router runs around every request, whatever answers it: a handler, the router itself (404, 405,
 * {@code OPTIONS}, a malformed path) or the failure policy (a thrown {@code HttpException}, a
 * 500). Registered with {@link AbstractRouter#filter}; the same on every front end, because it runs
 * in the one pipeline, not in a front end.
 *
 * <p>Filters nest in the order they are registered, as wrapping handlers do (Undertow's
 * {@code HttpHandler}s, Helidon's {@code Filter}): for filters A then B, a request goes through
 * {@code A.before}, {@code B.before}, the handler, {@code B.after}, {@code A.after}. A filter whose
 * {@code before} answers stops the way in (no later filter's {@code before}, no handler); the
 * {@code after} of every filter whose {@code before} ran still sees the answer, its own included.
 * So register the outermost first: a request id, then the access log (it sees every answer), then
 * CORS (its headers go on every answer, a 401 included), then authentication.
 *
 * <p>Both methods run on the front end's thread (a carrier, a worker, a virtual thread): they must
 * not block or wait (no database write, no outbound call); an exception from one becomes the
 * failure policy's 500.
 *
 * <pre>{@code
 * router.filter(new Filter() {                       // a header on every answer, errors included
 *     @Override
 *     public Response after(Request request, Response response) {
 *         return response.header("X-Frame-Options", "DENY");
 *     }
 * });
 * }</pre>
 */
public interface Filter {
    /**
     * Called before the handler, for every request.
     *
     * @param request the request: routed ({@link Request#pathParam} works) when a route matched
     * @param answer  the router's own answer when it has one (404, 405, {@code OPTIONS}' 200 with
     *                {@code Allow}, 400 for a malformed path), else null: a handler is to run
     * @return null to go on; or the response to answer with instead (no handler runs), e.g. a 401
     */
    default Response before(Request request, Response answer) {
        return null;
    }

    /**
     * Called with the answer, for every request whose {@link #before} this filter saw.
     *
     * @return the response to send: {@code response}, or a copy with headers added ({@link Response#header})
     */
    default Response after(Request request, Response response) {
        return response;
    }

    /**
     * Called for a request kiln's own HTTP layer refused before it could be routed (a malformed
     * request 400, a too large one 413 or 431, one too slow to arrive 408); its connection closes
     * after the response. The library front ends' parsers refuse such requests themselves, unseen.
     *
     * @param remote the client's address, or null
     * @param response  the refusal
     */
    default void refused(InetSocketAddress remote, Response response) {
    }
}

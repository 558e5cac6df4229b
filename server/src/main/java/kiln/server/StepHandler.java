package kiln.server;

import kiln.http.Request;

/**
 * Logic that answers a request with a {@link Step}: its response, or one wait and the rest. Written
 * once, it runs on every front end, each waiting its own way (a fiber pauses, a thread blocks, a
 * worker continues in a callback); the demo's endpoints are written this way. An exception becomes
 * the failure policy's response ({@link Failures}): throw {@link kiln.http.HttpException} for a client error.
 */
@FunctionalInterface
public interface StepHandler {
    /** @return the response, or the first wait; runs on the front end's thread up to that wait */
    Step handle(Request request) throws Exception;

    /**
     * Runs {@code logic} up to its first wait. Never throws: an exception (or an error) from the
     * logic gives the failure policy's response ({@link Failures}).
     *
     * @return the response, or the first wait, naming {@code request} in a later failure's log line
     */
    static Step start(StepHandler logic, Request request) {
        try {
            return logic.handle(request).forRequest(request);
        } catch (Exception | Error e) {
            return Step.of(Failures.toResponse(e, request));
        }
    }
}

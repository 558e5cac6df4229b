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
}

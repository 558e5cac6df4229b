package kiln.kilim;

import kilim.Pausable;
import kiln.http.Response;
import kiln.http.Request;

/**
 * Answers one request inside the connection's fiber. It may wait for the database or any other
 * future ({@code Fibers.await(db.write(q))}) or sleep ({@code Fibers.sleep(ms)}): those pause the
 * fiber, never the carrier thread.
 *
 * <p>Rules for the code a handler runs (it is Kilim fiber code):
 * <ul>
 *   <li>never block the carrier thread: no {@code Thread.sleep}, {@code join()}, blocking I/O or
 *       {@code synchronized} waits — there are only as many carriers as cores;</li>
 *   <li>no pausable call inside a {@code synchronized} block;</li>
 *   <li>the class must be woven by Kilim ({@code mvn package} does it); the server refuses
 *       unwoven handlers at start-up.</li>
 * </ul>
 * An exception becomes the failure policy's response ({@link kiln.server.Failures}): a
 * {@link kiln.http.HttpException} its own status, {@link kiln.db.DbException.Overloaded} 503, anything
 * else 500.
 */
@FunctionalInterface
public interface Handler {
    /**
     * @param request the parsed request
     * @return the response; never null
     */
    Response handle(Request request) throws Pausable, Exception;
}

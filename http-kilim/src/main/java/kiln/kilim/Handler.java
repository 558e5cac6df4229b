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
 * {@link kiln.http.HttpException} its own status, a {@link kiln.db.DbException} the status of its
 * kind (409 for a unique violation, 503 for an overloaded database...), anything else 500.
 *
 * <pre>{@code
 * router.get("/todos/{id}", req -> {
 *     long id = req.pathParamLong("id");
 *     Todo todo = await(db.read(txn -> todos.get(txn, id)));   // pauses the fiber, if it must wait
 *     if (todo == null) throw new HttpException(404, "no todo " + id);
 *     return Response.json(todo);
 * });
 * }</pre>
 */
@FunctionalInterface
public interface Handler {
    /**
     * Answers {@code request}, in the connection's fiber: the router calls it once per request it
     * routes here, the request's path parameters already matched.
     *
     * @param request the parsed request
     * @return the response; never null
     * @throws Pausable  never thrown: Kilim's mark of a method that may pause its fiber
     * @throws Exception what the failure policy answers (above)
     */
    Response handle(Request request) throws Pausable, Exception;
}

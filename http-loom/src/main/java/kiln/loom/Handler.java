package kiln.loom;

import kiln.http.Response;
import kiln.http.Request;

/**
 * Answers one request on the connection's virtual thread. It may wait for the database
 * ({@code db.read(q).join()}, {@code db.write(q).join()}) or sleep ({@code Thread.sleep(ms)}):
 * blocking parks the virtual thread and frees its carrier for other connections.
 *
 * <p>Rules for the code a handler runs (it is plain blocking Java on a virtual thread):
 * <ul>
 *   <li>do not pin the carrier for long: a virtual thread that blocks inside a native call, or (on
 *       JDK 21-23) inside a {@code synchronized} block, holds its carrier thread, and there are only
 *       as many carriers as cores; use {@code java.util.concurrent} locks around blocking code;</li>
 *   <li>a long computation holds its carrier too (virtual threads are not time-sliced).</li>
 * </ul>
 * An exception becomes the failure policy's response ({@link kiln.server.Failures}): a
 * {@link kiln.http.HttpException} its own status, a {@link kiln.db.DbException} the status of its
 * kind (409 for a unique violation, 503 for an overloaded database...), anything else 500.
 *
 * <pre>{@code
 * router.get("/todos/{id}", req -> {
 *     long id = req.pathParamLong("id");
 *     Todo todo = db.read(txn -> todos.get(txn, id)).join();   // parks the virtual thread, if it must wait
 *     if (todo == null) throw new HttpException(404, "no todo " + id);
 *     return Response.json(todo);
 * });
 * }</pre>
 */
@FunctionalInterface
public interface Handler {
    /**
     * Answers {@code request}, on the connection's virtual thread: the router calls it once per
     * request it routes here, the request's path parameters already matched.
     *
     * @param request the parsed request
     * @return the response; never null
     * @throws Exception what the failure policy answers (above)
     */
    Response handle(Request request) throws Exception;
}

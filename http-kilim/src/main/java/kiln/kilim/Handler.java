package kiln.kilim;

import kilim.Pausable;

/**
 * Answers one request inside the connection's fiber. It may await the database
 * ({@code db.read(q).await()}, {@code db.write(q).await()}) or sleep ({@code Task.sleep(ms)}):
 * those pause the fiber, never the carrier thread.
 *
 * <p>Rules for the code a handler runs (it is Kilim fiber code):
 * <ul>
 *   <li>never block the carrier thread: no {@code Thread.sleep}, {@code join()}, blocking I/O or
 *       {@code synchronized} waits — there are only as many carriers as cores;</li>
 *   <li>no pausable call inside a {@code synchronized} block;</li>
 *   <li>no records or sealed types in woven code (Kilim's weaver cannot read them);</li>
 *   <li>the class must be woven by Kilim ({@code mvn package} does it); the server refuses
 *       unwoven handlers at start-up.</li>
 * </ul>
 * An exception becomes a 500 response; {@link HttpException} its own status,
 * {@link kiln.app.Params.BadParameter} 400, {@link kiln.db.DbException.Overloaded} 503.
 */
@FunctionalInterface
public interface Handler {
    /**
     * @param request the parsed request
     * @return the response; never null
     */
    HttpResponse handle(HttpRequest request) throws Pausable, Exception;
}

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
 * {@link kiln.http.HttpException} its own status, {@link kiln.db.DbException.Overloaded} 503, anything
 * else 500.
 */
@FunctionalInterface
public interface Handler {
    /**
     * @param request the parsed request
     * @return the response; never null
     */
    Response handle(Request request) throws Exception;
}

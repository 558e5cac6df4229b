/**
 * The Kilim front end: every connection a fiber, and a handler that waits pauses its fiber, not
 * its thread. An app is a {@link kiln.kilim.Router} of {@link kiln.kilim.Handler}s served by
 * {@link kiln.kilim.KilimMain#serve}; a handler waits with {@link kiln.kilim.Fibers#await}.
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     KilimMain.serve("myapp", args, db -> {
 *         Table<String, Long> hits = db.table("hits", Codec.STRING, Codec.LONG);
 *         return new Router()
 *             .get("/hits/{page}", req -> Response.json(await(db.read(txn -> hits.get(txn, req.pathParam("page"), 0L)))));
 *     });
 * }
 * }</pre>
 *
 * <p>Classes with handlers must be woven by Kilim (mvn package, with kiln's weaver plugin). The
 * guide: docs/handlers.md, with the traps and the messages that name them.
 */
package kiln.kilim;

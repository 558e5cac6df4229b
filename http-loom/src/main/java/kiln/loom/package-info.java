/**
 * The virtual-thread front end (JDK 21 or newer at run time; built for 17): the Kilim front end's
 * twin, a handler being plain blocking Java. An app is a {@link kiln.loom.Router} of
 * {@link kiln.loom.Handler}s served by {@link kiln.loom.LoomMain#serve}; a handler waits with
 * {@code join()}, or with {@link kiln.loom.Waits} for a timeout or a call that would pin its carrier.
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     LoomMain.serve("myapp", args, db -> {
 *         Table<String, Long> hits = db.table("hits", Codec.STRING, Codec.LONG);
 *         return new Router()
 *             .get("/hits/{page}", req -> Response.json(db.read(txn -> hits.get(txn, req.pathParam("page"), 0L)).join()));
 *     });
 * }
 * }</pre>
 *
 * <p>The guide: docs/handlers.md, "The same handler on virtual threads".
 */
package kiln.loom;

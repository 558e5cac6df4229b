/**
 * HTTP as a handler sees it, on every front end: {@link kiln.http.Request} in,
 * {@link kiln.http.Response} out, {@link kiln.http.HttpException} for an error the client gets,
 * streamed bodies ({@link kiln.http.BodyStream}) and server-sent events
 * ({@link kiln.http.ServerSentEvents}), JSON ({@link kiln.http.Json}). No server, database, fibers
 * or metrics: those are floors above.
 *
 * <pre>{@code
 * req -> {
 *     long id = req.pathParamLong("id");                       // /todos/05: 404
 *     Todo change = req.json(Todo.class);                      // 400 naming the field, 415 for a form
 *     if (change.title == null) throw new HttpException(400, "a todo needs a title");
 *     return Response.json(change).noStore();
 * }
 * }</pre>
 *
 * <p>The guides: docs/handlers.md (requests, responses, errors), docs/live-data.md (streams).
 */
package kiln.http;

/**
 * The one request pipeline every front end runs, and what an app adds to it. For an app:
 * middleware ({@link kiln.server.Filter}: {@link kiln.server.Cors}, {@link kiln.server.AccessLog},
 * {@link kiln.server.RequestId}, {@link kiln.server.Authentication}), {@code /healthz} and
 * {@code /metrics} ({@link kiln.server.Operations}, {@link kiln.server.Metrics}), feeds as
 * server-sent events ({@link kiln.server.FeedEvents}), a pool for blocking calls
 * ({@link kiln.server.BlockingPool}), and logic written once for every front end
 * ({@link kiln.server.Step}).
 *
 * <pre>{@code
 * Router router = Operations.addTo(new Router(Metrics.create(db)), db)     // /healthz, /metrics
 *     .filter(new RequestId())
 *     .filter(AccessLog.toStandardOutput())
 *     .get("/hello", req -> Response.text("hello\n"));
 * }</pre>
 *
 * <p>For a front end's author: {@link kiln.server.AbstractRouter} (routing, HEAD, OPTIONS, 404/405,
 * the failure policy {@link kiln.server.Failures}), {@link kiln.server.Launcher} and
 * {@link kiln.server.ServerOptions} (the command line), the limits and the connection bookkeeping.
 * The guides: docs/handlers.md ("Middleware"), docs/operations.md (flags, limits, metrics).
 */
package kiln.server;

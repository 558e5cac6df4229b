/**
 * For a front end's author, not an app's: kiln's own HTTP/1.1 layer, which the Kilim and loom front
 * ends drive. {@link kiln.http.spi.Connection} is a connection's state machine (parse, route,
 * write, stream, time out) that does no I/O itself, so that a front end only moves bytes and
 * waits its own way; {@link kiln.http.spi.RequestParser} and {@link kiln.http.spi.ResponseWriter}
 * are its two ends, {@link kiln.http.spi.StreamedBody} the state of a streamed response on every
 * front end. Public because a front end lives in a module of its own (docs/contributing.md, "Add a
 * front end"); an app needs none of it.
 */
package kiln.http.spi;

package kiln.http;

import java.util.List;

import kiln.app.Request;
import kiln.app.Routes;

/**
 * One parsed HTTP/1.x request, as {@link RequestParser} produced it. Immutable.
 *
 * <p>Header names keep the client's spelling; look them up with {@link #header}, which ignores case
 * (RFC 9110 section 5.1).
 */
public final class HttpRequest implements Request {
    private final String method;
    private final String target;
    private final String path;
    private final String rawQuery;
    private final int minorVersion;
    private final List<String> headers;
    private final byte[] body;
    private final boolean keepAlive;
    /** The route the router matched, for {@link #pathParam}; set by {@link #routeIn} before the handler runs. */
    private Routes.Route<?> route;

    HttpRequest(String method, String target, String path, String rawQuery, int minorVersion,
                List<String> headers, byte[] body, boolean keepAlive) {
        this.method = method;
        this.target = target;
        this.path = path;
        this.rawQuery = rawQuery;
        this.minorVersion = minorVersion;
        this.headers = headers;
        this.body = body;
        this.keepAlive = keepAlive;
    }

    /**
     * A request as if a client had sent {@code METHOD TARGET HTTP/1.1} with no header fields and no
     * body: for testing code that takes a request without running a server.
     *
     * @param target an origin-form target, e.g. {@code /queries?queries=5}
     */
    public static HttpRequest of(String method, String target) {
        if (!target.startsWith("/")) throw new IllegalArgumentException("target must start with '/': " + target);
        int q = target.indexOf('?');
        return new HttpRequest(method, target, q < 0 ? target : target.substring(0, q), q < 0 ? null : target.substring(q + 1), 1,
            List.of(), new byte[0], true);
    }

    @Override
    public String method() {
        return method;
    }

    /** @return the request-target as sent, e.g. {@code /queries?queries=5} */
    public String target() {
        return target;
    }

    @Override
    public String path() {
        return path;
    }

    @Override
    public String rawQuery() {
        return rawQuery;
    }

    /** @return 0 for HTTP/1.0, 1 for HTTP/1.1 */
    public int minorVersion() {
        return minorVersion;
    }

    @Override
    public String header(String name) {
        for (int i = 0; i < headers.size(); i += 2) {
            if (headers.get(i).equalsIgnoreCase(name)) return headers.get(i + 1);
        }
        return null;
    }

    /**
     * Finds this request's route in {@code routes} and remembers it, so that {@link #pathParam}
     * reads the route's template: a front end's router calls it before running the handler.
     *
     * @return the route's handler, or null when there is none: answer {@code routes.miss(method(), path())}
     */
    public <H> H routeIn(Routes<H> routes) {
        Routes.Route<H> r = routes.find(method, path);
        route = r;
        return r == null ? null : r.handler;
    }

    /** @return the handler's route as registered and the method, e.g. {@code GET /todos/{id}}, for a log line */
    public String routeName() {
        return method + " " + (route != null ? route.pattern() : path);
    }

    @Override
    public String pathParam(String name) {
        if (route == null) throw new IllegalStateException("pathParam(\"" + name + "\") before the request was routed");
        return route.param(path, name);
    }

    @Override
    public byte[] body() {
        return body;
    }

    /**
     * @return whether the connection stays open after the response: HTTP/1.1 unless
     *         {@code Connection: close}; HTTP/1.0 only with {@code Connection: keep-alive}
     *         (RFC 9112 section 9.3)
     */
    public boolean keepAlive() {
        return keepAlive;
    }

    @Override
    public String toString() {
        return method + " " + target + " HTTP/1." + minorVersion;
    }
}

package kiln.app;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Routing, written once for every front end: (method, exact path) to a handler of type {@code H}.
 * A path no route has is 404; a path asked with a method it has no route for is 405 with
 * {@code Allow} listing the methods it has (RFC 9110 sections 15.5.5, 15.5.6).
 *
 * @param <H> the handler type: the endpoints' logic, or a front end's own (Kilim's fiber handlers)
 */
public final class Routes<H> {
    private final Map<String, Map<String, H>> byPath = new HashMap<>();

    /**
     * Adds a route.
     *
     * @param method a method token, e.g. {@code GET}
     * @param path   an exact path starting with '/', without a query
     * @return this
     * @throws IllegalArgumentException when the route exists already or the path does not start with '/'
     */
    public Routes<H> add(String method, String path, H handler) {
        if (!path.startsWith("/")) throw new IllegalArgumentException("path must start with '/': " + path);
        H previous = byPath.computeIfAbsent(path, p -> new LinkedHashMap<>()).putIfAbsent(method, handler);
        if (previous != null) throw new IllegalArgumentException("route " + method + " " + path + " registered twice");
        return this;
    }

    /** @return the handler for {@code method} on {@code path}, or null: answer {@link #miss} */
    public H find(String method, String path) {
        Map<String, H> byMethod = byPath.get(path);
        return byMethod == null ? null : byMethod.get(method);
    }

    /** @return the answer when {@link #find} found nothing: 404, or 405 with {@code Allow} */
    public Reply miss(String method, String path) {
        Map<String, H> byMethod = byPath.get(path);
        if (byMethod == null) return Reply.notFound(path);
        return Reply.methodNotAllowed(method, path, String.join(", ", byMethod.keySet()));
    }
}

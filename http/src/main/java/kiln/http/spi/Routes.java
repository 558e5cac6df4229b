package kiln.http.spi;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import kiln.http.Http;
import kiln.http.HttpException;
import kiln.http.PathTemplate;
import kiln.http.Paths;
import kiln.http.Response;

/**
 * Routing, written once for every front end: (method, path) to a handler of type {@code H}.
 * <ul>
 *   <li>A path is exact ({@code /todos}) or a template whose segments may be parameters
 *       ({@code /todos/{id}}: one whole segment each, read with {@link Route#param}). Exact paths
 *       win over templates; templates are tried in the order added.</li>
 *   <li>{@code HEAD} is answered by the {@code GET} route when the path has no {@code HEAD} route
 *       of its own (RFC 9110 section 9.3.2: the same head, no body; the front end drops the body).</li>
 *   <li>{@code OPTIONS} is answered for every path that has a route, when the path has no
 *       {@code OPTIONS} route of its own: 200, no content, {@code Allow} listing its methods (RFC
 *       9110 section 9.3.7); {@code OPTIONS *} (the asterisk-form, RFC 9112 section 3.2.4) asks
 *       about the server as a whole and gets every method some route has. {@code Allow} always
 *       lists {@code OPTIONS} too. (HAProxy's default health check is {@code OPTIONS /}.)</li>
 *   <li>A path no route has is 404; a path asked with a method it has no route for is 405 with
 *       {@code Allow} listing the methods it has (RFC 9110 sections 15.5.5, 15.5.6).</li>
 * </ul>
 * Paths are matched as given: a front end passes them through {@link Paths#normalize} first.
 *
 * @param <H> the handler type: the endpoints' logic, or a front end's own (Kilim's fiber handlers)
 */
public final class Routes<H> {
    private final Map<String, Map<String, Route<H>>> exact = new HashMap<>();
    private final List<PathTemplate> templates = new ArrayList<>();
    /** Keyed by identity: {@link #add} reuses the one PathTemplate of a pattern. */
    private final Map<PathTemplate, Map<String, Route<H>>> byTemplate = new HashMap<>();

    /** A matched route: its handler and the template that reads path parameters. */
    public static final class Route<H> {
        /** The method it was registered for, e.g. {@code GET}. */
        public final String method;
        /** What the router registered: a handler of the front end's kind. */
        public final H handler;
        /** The path or template it was registered with; it reads the request's path parameters. */
        public final PathTemplate template;

        Route(String method, H handler, PathTemplate template) {
            this.method = method;
            this.handler = handler;
            this.template = template;
        }

        /**
         * @param path the request's path, as the route was found with
         * @param name a parameter of the route's template, e.g. {@code id} of {@code /todos/{id}}
         * @return that segment of {@code path}, percent-decoded as UTF-8
         * @throws IllegalArgumentException when the template has no parameter {@code name}
         * @throws HttpException 400 when the segment is badly percent-encoded
         */
        public String param(String path, String name) {
            return template.param(path, name);
        }

        /** @return the path as registered, e.g. {@code /todos/{id}} */
        public String pattern() {
            return template.pattern();
        }
    }

    /**
     * Adds a route.
     *
     * @param method a method token, e.g. {@code GET}
     * @param path   an exact path or a template ({@code /todos/{id}}), starting with '/', without a query
     * @return this
     * @throws IllegalArgumentException when the route exists already, the method is not a token, or
     *                                  the path is malformed
     */
    public Routes<H> add(String method, String path, H handler) {
        if (method.isEmpty() || !method.chars().allMatch(Http::isTokenChar)) throw new IllegalArgumentException("method is not a token: " + method);
        PathTemplate t = PathTemplate.parse(path);
        Map<String, Route<H>> byMethod;
        if (t.isExact()) {
            byMethod = exact.computeIfAbsent(path, p -> new HashMap<>());
        } else {
            for (PathTemplate other : templates) {
                if (!other.sameShape(t)) continue;
                if (!other.pattern().equals(path)) throw new IllegalArgumentException(path + " clashes with " + other.pattern());
                t = other;
            }
            byMethod = byTemplate.get(t);
            if (byMethod == null) {
                templates.add(t);
                byMethod = new HashMap<>();
                byTemplate.put(t, byMethod);
            }
        }
        if (byMethod.putIfAbsent(method, new Route<>(method, handler, t)) != null) {
            throw new IllegalArgumentException("route " + method + " " + path + " registered twice");
        }
        return this;
    }

    /** @return the route for {@code method} on {@code path} ({@code HEAD} falls back to {@code GET}), or null: answer {@link #miss} */
    public Route<H> find(String method, String path) {
        Map<String, Route<H>> byMethod = methodsOf(path);
        if (byMethod == null) return null;
        Route<H> r = byMethod.get(method);
        if (r == null && method.equals("HEAD")) r = byMethod.get("GET");
        return r;
    }

    /**
     * @return the answer when {@link #find} found nothing: {@code OPTIONS}' 200 with {@code Allow}
     *         (also for {@code OPTIONS *}), 404, or 405 with {@code Allow}
     */
    public Response miss(String method, String path) {
        if (method.equals("OPTIONS") && path.equals("*")) return Response.options(allow(allMethods()));
        Map<String, Route<H>> byMethod = methodsOf(path);
        if (byMethod == null) return Response.notFound(path);
        String allow = allow(byMethod.keySet());
        if (method.equals("OPTIONS")) return Response.options(allow);
        return Response.methodNotAllowed(method, path, allow);
    }

    private Set<String> allMethods() {
        Set<String> all = new LinkedHashSet<>();
        for (Map<String, Route<H>> byMethod : exact.values()) all.addAll(byMethod.keySet());
        for (Map<String, Route<H>> byMethod : byTemplate.values()) all.addAll(byMethod.keySet());
        return all;
    }

    /** @return the Allow value for routes of {@code methods}: HEAD with GET, OPTIONS always, the usual ones first */
    private static String allow(Set<String> methods) {
        Set<String> allow = new LinkedHashSet<>();
        for (String m : new String[] {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}) {
            if (methods.contains(m) || (m.equals("HEAD") && methods.contains("GET")) || m.equals("OPTIONS")) allow.add(m);
        }
        List<String> others = new ArrayList<>(methods);
        java.util.Collections.sort(others);
        allow.addAll(others);
        return String.join(", ", allow);
    }

    private Map<String, Route<H>> methodsOf(String path) {
        Map<String, Route<H>> byMethod = exact.get(path);
        if (byMethod != null || templates.isEmpty()) return byMethod;
        for (PathTemplate t : templates) {
            if (t.matches(path)) return byTemplate.get(t);
        }
        return null;
    }

    
}

package kiln.kilim;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.LinkedHashMap;
import java.util.Map;

import kilim.Fiber;
import kiln.app.Reply;
import kilim.Pausable;

/**
 * Maps (method, exact path) to a {@link Handler}. An unknown path answers 404; a known path with
 * another method answers 405 with {@code Allow} listing the methods it has (RFC 9110 section 15.5.6).
 *
 * <p>Registering a handler whose class Kilim did not weave fails at once with an
 * {@link IllegalStateException} that says how to build it, instead of failing on the first request.
 */
public final class Router {
    private final Map<String, Map<String, Handler>> routes = new LinkedHashMap<>();

    /** Registers {@code handler} for GET {@code path}. */
    public Router get(String path, Handler handler) {
        return route("GET", path, handler);
    }

    /** Registers {@code handler} for POST {@code path}. */
    public Router post(String path, Handler handler) {
        return route("POST", path, handler);
    }

    /**
     * Registers {@code handler} for {@code method} on {@code path} (exact match, no query string).
     *
     * @throws IllegalStateException when the handler's class was not woven by Kilim
     * @throws IllegalArgumentException when the route exists already or the path does not start with '/'
     */
    public Router route(String method, String path, Handler handler) {
        if (!path.startsWith("/")) throw new IllegalArgumentException("path must start with '/': " + path);
        requireWoven(handler);
        Handler previous = routes.computeIfAbsent(path, p -> new LinkedHashMap<>()).putIfAbsent(method, handler);
        if (previous != null) throw new IllegalArgumentException("route " + method + " " + path + " registered twice");
        return this;
    }

    /** Runs the handler for {@code request}, or answers 404/405. */
    HttpResponse dispatch(HttpRequest request) throws Pausable, Exception {
        Map<String, Handler> byMethod = routes.get(request.path());
        if (byMethod == null) return HttpResponse.of(Reply.notFound(request.path()));
        Handler h = byMethod.get(request.method());
        if (h == null) {
            return HttpResponse.of(Reply.methodNotAllowed(request.method(), request.path()))
                .withHeader("Allow", String.join(", ", byMethod.keySet()));
        }
        return h.handle(request);
    }

    /**
     * Kilim's weaver gives every pausable method an extra {@link Fiber} parameter; the woven
     * {@link Handler} interface declares {@code handle(HttpRequest, Fiber)} as a default method that
     * only reports the error. A handler whose class (or, for a lambda, whose enclosing class) was
     * woven overrides it; an unwoven one inherits the default and would fail at its first request
     * with Kilim's cryptic "Task has either not been woven or the classpath is incorrect".
     */
    static void requireWoven(Handler handler) {
        Method m;
        try {
            m = handler.getClass().getMethod("handle", HttpRequest.class, Fiber.class);
        } catch (NoSuchMethodException e) {
            m = null;
        }
        if (m == null || Modifier.isAbstract(m.getModifiers()) || m.getDeclaringClass().isInterface()) {
            throw new IllegalStateException("handler " + handler.getClass().getName() + " was not woven by Kilim."
                + " Build with Maven so that the kilim plugin's 'weave' goal runs (mvn package; a bare 'mvn compile'"
                + " leaves classes unwoven), and run the woven classes in target/classes or the shaded jar.");
        }
    }
}

package kiln.kilim;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.concurrent.CompletableFuture;

import kilim.Cell;
import kilim.Fiber;
import kilim.Pausable;
import kilim.Task;
import kiln.app.DemoDb;
import kiln.app.Endpoint;
import kiln.app.Endpoints;
import kiln.app.Failures;
import kiln.app.Metrics;
import kiln.app.Reply;
import kiln.app.Step;
import kiln.http.AbstractRouter;
import kiln.http.HttpRequest;

/**
 * Maps (method, path) to a fiber {@link Handler}, with the routing every front end shares
 * ({@link AbstractRouter} over {@link kiln.app.Routes}): exact paths and templates
 * ({@code /todos/{id}}), HEAD answered by GET, 404 for an unknown path, 405 with {@code Allow} for
 * a known path asked with another method.
 *
 * <pre>{@code
 * Router router = Router.withEndpoints(DemoDb.open(db))     // the demo endpoints of the registry
 *     .get("/hits", req -> ...);                            // plus your own fiber handlers
 * }</pre>
 *
 * <p>Registering a handler whose class Kilim did not weave fails at once with an
 * {@link IllegalStateException} that says how to build it, instead of failing on the first request.
 */
public final class Router extends AbstractRouter<Handler, Router> {
    /** A router of your own handlers; it records no metrics (it serves no {@code /metrics}). */
    public Router() {
        this(Metrics.off());
    }

    private Router(Metrics metrics) {
        super(metrics);
    }

    /**
     * @return a router serving every endpoint of the registry ({@link Endpoints#ALL}) from
     *         {@code demo}, each run in the connection's fiber: a durable write or a delay pauses
     *         the fiber, never the carrier thread
     */
    public static Router withEndpoints(DemoDb demo) {
        return withEndpoints(Endpoints.serve(demo));
    }

    /**
     * As {@link #withEndpoints(DemoDb)}, with the server's metrics ({@code ServerOptions.metrics}):
     * every route of the router, your own too, is counted and timed in them.
     */
    public static Router withEndpoints(DemoDb demo, Metrics metrics) {
        return withEndpoints(Endpoints.serve(demo, metrics));
    }

    private static Router withEndpoints(Endpoints endpoints) {
        Router router = new Router(endpoints.metrics());
        for (Endpoint e : Endpoints.ALL) router.route(e.method, e.path, request -> run(endpoints.start(e, request)));
        return router;
    }

    /** @throws IllegalStateException when the handler's class was not woven by Kilim */
    @Override
    protected void check(Handler handler) {
        requireWoven(handler);
    }

    /**
     * Runs the handler for {@code request}, or answers 404/405; a handler's exception becomes the
     * failure policy's reply ({@link Failures}). Records the request in the metrics, once.
     */
    Reply dispatch(HttpRequest request) throws Pausable {
        long started = metrics().start();
        Entry<Handler> entry = find(request);
        if (entry == null) return miss(request, started);
        Reply reply;
        try {
            reply = entry.handler.handle(request);
        } catch (Exception e) {
            reply = Failures.toReply(e, request);
        }
        return entry.answered(reply, started);
    }

    /** Runs an endpoint's {@link Step}s in this fiber: each wait pauses the fiber, not the carrier. */
    private static Reply run(Step step) throws Pausable {
        while (!step.isDone()) {
            if (step.sleepMs() > 0) {
                Task.sleep(step.sleepMs());
            } else {
                awaitCompletion(step.future());
            }
            step = step.next();
        }
        return step.reply();
    }

    /** Pauses the fiber until {@code future} is complete; whichever thread completes it only signals. */
    private static void awaitCompletion(CompletableFuture<?> future) throws Pausable {
        if (future.isDone()) return;
        Cell<Boolean> done = new Cell<>();
        future.whenComplete((r, t) -> done.putnb(Boolean.TRUE));
        done.get();
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

package kiln.kilim;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

import kilim.Fiber;
import kilim.Pausable;
import kiln.http.Response;
import kiln.http.Request;
import kiln.server.AbstractRouter;
import kiln.server.Metrics;
import kiln.server.Step;
import kiln.server.StepHandler;

/**
 * Maps (method, path) to a fiber {@link Handler}, through the pipeline every front end shares
 * ({@link AbstractRouter}): exact paths and templates ({@code /todos/{id}}), HEAD answered by GET,
 * OPTIONS, 404 for an unknown path, 405 with {@code Allow}, the failure policy and the metrics.
 *
 * <pre>{@code
 * Router router = new Router()
 *     .get("/hits", req -> ...)                     // your fiber handlers
 *     .post("/todos", req -> ...);
 * }</pre>
 *
 * <p>Registering a handler whose class Kilim did not weave fails at once with an
 * {@link IllegalStateException} that says how to build it, instead of failing on the first request.
 */
public final class Router extends AbstractRouter<Handler, Router> {
    /** A router that records no metrics (it serves no {@code /metrics}). */
    public Router() {
        this(Metrics.off());
    }

    /**
     * A router whose requests are counted and timed in {@code metrics}, which {@code /metrics} serves:
     * {@code Operations.addTo(new Router(Metrics.create(db)), db)}.
     *
     * @param metrics where every request of every route is counted and timed ({@link Metrics#create},
     *                or {@code ServerOptions.metrics(db)}, which honours {@code --no-metrics})
     */
    public Router(Metrics metrics) {
        super(metrics);
    }

    /** @throws IllegalStateException when the handler's class was not woven by Kilim */
    @Override
    protected void check(Handler handler) {
        requireWoven(handler);
    }

    /** Runs {@code logic}'s {@link Step}s in the connection's fiber: each wait pauses the fiber, not the carrier. */
    @Override
    protected Handler fromSteps(StepHandler logic) {
        return request -> run(StepHandler.start(logic, request));
    }

    /** Routes {@code request} and runs its handler in this fiber (the pipeline of {@link AbstractRouter}). */
    Response dispatch(Request request) throws Pausable {
        Exchange<Handler> x = begin(request);
        if (x.hasResponse()) return x.respond(x.response());
        try {
            return x.respond(x.handler().handle(request));
        } catch (Exception e) {
            return x.fail(e);
        }
    }

    private static Response run(Step step) throws Pausable {
        while (!step.isDone()) {
            if (step.sleepMs() > 0) {
                Fibers.sleep(step.sleepMs());
            } else {
                Fibers.await(step.future().handle((r, t) -> null));  // the outcome is read by next()
            }
            step = step.next();
        }
        return step.response();
    }

    /**
     * Kilim's weaver gives every pausable method an extra {@link Fiber} parameter; the woven
     * {@link Handler} interface declares {@code handle(Request, Fiber)} as a default method that
     * only reports the error. A handler whose class (or, for a lambda, whose enclosing class) was
     * woven overrides it; an unwoven one inherits the default and would fail at its first request
     * with Kilim's cryptic "Task has either not been woven or the classpath is incorrect".
     */
    static void requireWoven(Handler handler) {
        Method m;
        try {
            m = handler.getClass().getMethod("handle", Request.class, Fiber.class);
        } catch (NoSuchMethodException e) {
            m = null;
        }
        if (m == null || Modifier.isAbstract(m.getModifiers()) || m.getDeclaringClass().isInterface()) {
            throw new IllegalStateException("handler " + handler.getClass().getName() + " was not woven by Kilim."
                + " Build with Maven so that the kiln-kilim-weaver plugin's 'weave' goal runs (mvn package; a bare"
                + " 'mvn compile' leaves classes unwoven), and run the woven classes in target/classes or the shaded jar.");
        }
    }
}

package kiln.comsat;

import java.io.IOException;
import java.util.logging.Level;
import java.util.logging.Logger;

import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import co.paralleluniverse.fibers.Fiber;
import co.paralleluniverse.fibers.SuspendExecution;
import co.paralleluniverse.fibers.Suspendable;
import co.paralleluniverse.fibers.servlet.FiberHttpServlet;
import kiln.http.Reply;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.server.Streaming;
import org.eclipse.jetty.server.Response;

/**
 * The endpoint registry served by Quasar fibers: every wait of an endpoint ({@link Step}) suspends
 * the request's fiber instead of a thread.
 *
 * <h2>Threads</h2>
 * Comsat's {@link FiberHttpServlet} turns every request into an async servlet request and runs
 * {@link #service(HttpServletRequest, HttpServletResponse)} in a new fiber on Quasar's default
 * scheduler (a fork-join pool of {@code --threads} carrier threads); when it returns, Comsat
 * completes the request. Jetty's own threads only parse requests and start fibers. A fiber waits
 * for a database write through {@link FiberAwait} and for {@code /hello?delay=MS} with
 * {@link Fiber#sleep}: it must never block its carrier (no {@code join()}, no
 * {@code Thread.sleep}, no suspension inside {@code synchronized}).
 *
 * <p>Methods that suspend declare {@link SuspendExecution}, which is how Quasar's agent knows to
 * instrument them; {@link #service(HttpServletRequest, HttpServletResponse)} overrides a servlet
 * method and so is marked {@link Suspendable} instead. The servlet methods Comsat calls on the way
 * are listed in {@code META-INF/suspendables}.
 */
final class KilnServlet extends FiberHttpServlet {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = Logger.getLogger(KilnServlet.class.getName());

    private final transient StepRouter router;

    /** @param router the routes (the demo's endpoints) */
    KilnServlet(StepRouter router) {
        this.router = router;
    }

    /** Runs in the request's fiber; answers every method and path through the registry's routing. */
    @Override
    @Suspendable
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        Exchange<StepHandler> exchange = router.begin(request.getMethod(), request.getRequestURI(), request.getQueryString());
        Reply reply;
        try {
            reply = run(StepRouter.firstStep(exchange));
        } catch (SuspendExecution e) {
            // Quasar's instrumentation suspends and resumes through this frame; the exception never
            // reaches here in instrumented code.
            throw uninstrumented(e);
        } catch (InterruptedException e) {
            reply = interrupted(request, e);
        }
        reply = exchange.answer(Streaming.unlessStreamed(reply, "comsat"));
        Responses.send(request, (Response) response, reply);
    }

    /**
     * Runs an endpoint's {@link Step}s in this fiber: a durable write suspends it once around the
     * database future ({@link FiberAwait}), a delay in {@link Fiber#sleep}.
     */
    private static Reply run(Step step) throws SuspendExecution, InterruptedException {
        while (!step.isDone()) {
            if (step.sleepMs() > 0) {
                Fiber.sleep(step.sleepMs());
            } else {
                FiberAwait.await(step.future());
            }
            step = step.next();
        }
        return step.reply();
    }

    // Suspendable methods here build no exception or message themselves: Quasar's analyzer warns
    // about "new X(...)" whose arguments make calls, so that work sits in these plain helpers.

    private static AssertionError uninstrumented(SuspendExecution e) {
        return new AssertionError("Quasar did not instrument " + KilnServlet.class.getName() + ".service", e);
    }

    private static Reply interrupted(HttpServletRequest request, InterruptedException e) {
        Thread.currentThread().interrupt();
        LOG.log(Level.WARNING, "request fiber interrupted: " + request.getRequestURI(), e);
        return Reply.internalError();
    }
}

package kiln.comsat;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Level;
import java.util.logging.Logger;

import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import co.paralleluniverse.fibers.Fiber;
import co.paralleluniverse.fibers.SuspendExecution;
import co.paralleluniverse.fibers.Suspendable;
import co.paralleluniverse.fibers.servlet.FiberHttpServlet;
import kiln.http.Response;
import kiln.server.AbstractRouter.Exchange;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;
import kiln.server.OpenStreams;
import kiln.server.WorkerPool;
import org.eclipse.jetty.server.Request;

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

    /** The request attribute that holds Jetty's own {@link Request} (Comsat's wrapper implements only Servlet 3.0). */
    static final String BASE_REQUEST = "kiln.comsat.baseRequest";

    private final transient StepRouter router;
    private final transient OpenStreams streams;
    private final transient WorkerPool streamWorker;
    /** The request memory and deadlines a request's content is read within. */
    private final transient FiberContent.Limits limits;

    /**
     * @param router       the routes (an app's: the demo's endpoints, the board)
     * @param streams      the server's open streams: ended at a stop
     * @param streamWorker the thread that continues streamed bodies between parts, and their heartbeat timer
     * @param limits       the request memory and deadlines a request's content is read within
     */
    KilnServlet(StepRouter router, OpenStreams streams, WorkerPool streamWorker, FiberContent.Limits limits) {
        this.router = router;
        this.streams = streams;
        this.streamWorker = streamWorker;
        this.limits = limits;
    }

    /**
     * Runs in the request's fiber; answers every method and path through the router. The fiber
     * suspends for the request's content, for each wait of the handler, and for the whole of a
     * streamed body, whose parts go out through servlet async I/O as the body gives them.
     */
    @Override
    @Suspendable
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        Request base = (Request) request.getAttribute(BASE_REQUEST);
        FiberContent content = FiberContent.read(base, limits);
        try {
            FiberAwait.await(content.future);
            // the client left midway, or the content was refused (and answered) for want of memory or time
            if (content.future.isCompletedExceptionally()) return;
            Exchange<StepHandler> exchange = begin(base, content.future.join());
            Response reply = exchange.respond(run(StepRouter.firstStep(exchange)));
            content.release();
            if (reply.stream == null || "HEAD".equals(request.getMethod())) {
                Responses.send(request, (org.eclipse.jetty.server.Response) response, reply);
            } else {
                startStream(request, response, base, reply, exchange.request().routeName());
            }
        } catch (SuspendExecution e) {
            // Quasar's instrumentation suspends and resumes through this frame; the exception never
            // reaches here in instrumented code.
            throw uninstrumented(e);
        } catch (InterruptedException e) {
            Responses.send(request, (org.eclipse.jetty.server.Response) response, interrupted(request, e));
        } finally {
            content.release();
        }
    }

    /** Sends the head of a streamed reply and the body's parts; its end when it was never sent. */
    private void startStream(HttpServletRequest request, HttpServletResponse response, Request base, Response reply, String name)
        throws IOException, InterruptedException, SuspendExecution {
        CompletableFuture<String> ended;
        try {
            Responses.head(request, (org.eclipse.jetty.server.Response) response, reply);
            ended = stream(base, reply, name);
        } catch (IOException | RuntimeException e) {
            OpenStreams.notSent(reply);
            throw e;
        }
        FiberAwait.await(ended);
    }

    private Exchange<StepHandler> begin(Request request, byte[] content) {
        return router.begin(request.getMethod(), request.getRequestURI(), request.getQueryString(), Responses.headers(request),
            content, request.getRemoteInetSocketAddress());
    }

    /** @return when the streamed body has ended, sent by callbacks on the stream worker ({@link OpenStreams#runAsync}) */
    private CompletableFuture<String> stream(Request request, Response reply, String name) throws IOException {
        return streams.runAsync(reply.stream, new FiberContent.Stream(request), name, streamWorker.queue(), streamWorker.timer());
    }

    /**
     * Runs an endpoint's {@link Step}s in this fiber: a durable write suspends it once around the
     * database future ({@link FiberAwait}), a delay in {@link Fiber#sleep}.
     */
    private static Response run(Step step) throws SuspendExecution, InterruptedException {
        while (!step.isDone()) {
            if (step.sleepMs() > 0) {
                Fiber.sleep(step.sleepMs());
            } else {
                FiberAwait.await(step.future());
            }
            step = step.next();
        }
        return step.response();
    }

    // Suspendable methods here build no exception or message themselves: Quasar's analyzer warns
    // about "new X(...)" whose arguments make calls, so that work sits in these plain helpers.

    private static AssertionError uninstrumented(SuspendExecution e) {
        return new AssertionError("Quasar did not instrument " + KilnServlet.class.getName() + ".service", e);
    }

    private static Response interrupted(HttpServletRequest request, InterruptedException e) {
        Thread.currentThread().interrupt();
        LOG.log(Level.WARNING, "request fiber interrupted: " + request.getRequestURI(), e);
        return Response.internalError();
    }
}

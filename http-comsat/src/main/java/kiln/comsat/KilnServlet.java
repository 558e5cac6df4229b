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
import kiln.app.Bodies;
import kiln.app.DemoDb;
import kiln.app.Http.Endpoint;
import kiln.app.Params;
import kiln.app.Reply;
import kiln.app.World;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.Query;
import org.eclipse.jetty.server.Response;

/**
 * The demo's endpoints as fiber code: each reads like blocking code, and every wait suspends the
 * request's Quasar fiber instead of a thread.
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
 *
 * <p>Test types and rules: TechEmpower Framework Benchmarks, "Framework Tests Overview".
 */
final class KilnServlet extends FiberHttpServlet {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = Logger.getLogger(KilnServlet.class.getName());

    private final transient DemoDb demo;
    private final transient Db db;

    KilnServlet(DemoDb demo) {
        this.demo = demo;
        this.db = demo.db();
    }

    /** Runs in the request's fiber; answers every method and path (routing is {@link #respond}). */
    @Override
    @Suspendable
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        Reply reply;
        try {
            reply = respond(request.getMethod(), request.getRequestURI(), request.getQueryString());
        } catch (SuspendExecution e) {
            // Quasar's instrumentation suspends and resumes through this frame; the exception never
            // reaches here in instrumented code.
            throw uninstrumented(e);
        } catch (InterruptedException e) {
            reply = interrupted(request, e);
        }
        Responses.send(request, (Response) response, reply);
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

    private static Reply failed(String method, String path, RuntimeException e) {
        LOG.log(Level.SEVERE, "request failed: " + method + " " + path, e);
        return Reply.internalError();
    }

    /**
     * Answers one request: 404 for an unknown path, 405 for a method other than GET (RFC 9110
     * sections 15.5.5, 15.5.6), 400 for a bad parameter, 503 when the database is overloaded, 500
     * for any other failure (logged).
     *
     * @param path     the request path, not decoded
     * @param rawQuery the query string without {@code ?}, still percent-encoded, or null
     */
    Reply respond(String method, String path, String rawQuery) throws SuspendExecution, InterruptedException {
        Endpoint endpoint = Endpoint.of(path);
        if (endpoint == null) return Reply.notFound(path);
        if (!"GET".equals(method)) return Reply.methodNotAllowed(method, path);
        try {
            return endpoint(endpoint, rawQuery);
        } catch (Params.BadParameter e) {
            return Reply.error(400, e.getMessage());
        } catch (DbException.Overloaded e) {
            return Reply.overloaded();
        } catch (RuntimeException e) {
            return failed(method, path, e);
        }
    }

    private Reply endpoint(Endpoint endpoint, String rawQuery) throws SuspendExecution, InterruptedException {
        switch (endpoint) {
            case INDEX:
                return Reply.ok(endpoint, Bodies.INDEX);
            case PLAINTEXT:
                return Reply.ok(endpoint, Bodies.PLAINTEXT);
            case JSON:
                return Reply.ok(endpoint, Bodies.helloJson());
            case DB:
                return Reply.ok(endpoint, Bodies.json(read(demo.randomWorld())));
            case QUERIES:
                return Reply.ok(endpoint, Bodies.json(readRandomWorlds(Params.queriesParam(rawQuery))));
            case UPDATES: {
                World[] rows = readRandomWorlds(Params.queriesParam(rawQuery));
                World[] updated = FiberAwait.await(db.write(demo.updateWithNewRandomNumbers(rows)));  // durable on return
                return Reply.ok(endpoint, Bodies.json(updated));
            }
            case FORTUNES:
                return Reply.ok(endpoint, Bodies.fortunesHtml(read(demo.allFortunes())));
            case HELLO: {
                int ms = Params.delayParam(rawQuery);
                if (ms > 0) Fiber.sleep(ms);
                return Reply.ok(endpoint, Bodies.HELLO);
            }
            default:
                throw noHandler(endpoint);
        }
    }

    private static IllegalStateException noHandler(Endpoint endpoint) {
        return new IllegalStateException("endpoint without a handler: " + endpoint);
    }

    /** N separate random single-row reads, as the multiple-queries test requires. */
    private World[] readRandomWorlds(int n) throws SuspendExecution, InterruptedException {
        World[] rows = new World[n];
        for (int i = 0; i < n; i++) rows[i] = read(demo.randomWorld());
        return rows;
    }

    /** A read: {@link Db#read} runs it inline and returns a completed future, so this never suspends. */
    private <R> R read(Query<R> query) throws SuspendExecution, InterruptedException {
        return FiberAwait.await(db.read(query));
    }
}

package kiln.app;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.Query;
import kiln.db.QueryFuture;

/**
 * The endpoints of the contract for front ends that wait with {@link CompletionStage}s instead of
 * fibers (Jetty, Undertow): one call turns a request's method, path and query string into a
 * {@link Reply}. The front end only parses HTTP, writes the reply's headers and body, and chooses
 * <em>how</em> to wait through {@link Waits}: {@link Waits#nonBlocking} for the async modes,
 * {@link Waits#blocking} for the thread-per-request baselines.
 *
 * <p>An endpoint waits at exactly two points: for a durable write ({@code /updates}) and for the
 * {@code /hello} delay. Reads never wait: {@link Db#read} runs the query on the calling thread and
 * returns a completed future.
 *
 * <p>Routing: an unknown path is 404, a known path with any method but GET is 405 with
 * {@code Allow: GET} (RFC 9110 sections 15.5.5, 15.5.6). Bad {@code delay} or a malformed
 * percent-escape in the query string is 400. {@link DbException.Overloaded} is 503 with
 * {@code Retry-After: 1}; any other failure is 500, logged with its stack trace.
 */
public final class AsyncEndpoints {
    private static final Logger LOG = Logger.getLogger(AsyncEndpoints.class.getName());

    /** The two points where an endpoint waits, implemented by the front end's threading model. */
    public interface Waits {
        /**
         * @param pending a write submitted to the database
         * @return a stage that completes with the write's outcome on a thread allowed to render
         *         and send the response (not the database's writer thread)
         */
        <T> CompletionStage<T> write(QueryFuture<T> pending);

        /** @return a stage that completes {@code ms} milliseconds from now ({@code ms} > 0) */
        CompletionStage<Void> sleep(int ms);

        /**
         * Waiting for the thread-per-request baselines: the calling thread blocks in
         * {@link QueryFuture#join} and {@link Thread#sleep}, and the returned stages are already
         * complete, so the whole request runs on the calling thread.
         */
        static Waits blocking() {
            return new Waits() {
                @Override
                public <T> CompletionStage<T> write(QueryFuture<T> pending) {
                    try {
                        return CompletableFuture.completedFuture(pending.join());
                    } catch (CompletionException e) {
                        return CompletableFuture.failedFuture(e.getCause());
                    }
                }

                @Override
                public CompletionStage<Void> sleep(int ms) {
                    try {
                        Thread.sleep(ms);
                        return CompletableFuture.completedFuture(null);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return CompletableFuture.failedFuture(e);
                    }
                }
            };
        }

        /**
         * Waiting that never blocks the calling thread: a write's completion and the end of a
         * delay are handed to {@code continuations} (the front end's worker threads), which then
         * render and send the response. So the database's writer thread only signals, and so does
         * the {@code timer} thread: neither spends time on HTTP.
         *
         * @param continuations where the rest of a request runs after it waited
         * @param timer         schedules the ends of {@code /hello} delays
         */
        static Waits nonBlocking(Executor continuations, ScheduledExecutorService timer) {
            return new Waits() {
                @Override
                public <T> CompletionStage<T> write(QueryFuture<T> pending) {
                    return pending.thenApplyAsync(Function.identity(), continuations);
                }

                @Override
                public CompletionStage<Void> sleep(int ms) {
                    CompletableFuture<Void> slept = new CompletableFuture<>();
                    timer.schedule(() -> continuations.execute(() -> slept.complete(null)), ms, TimeUnit.MILLISECONDS);
                    return slept;
                }
            };
        }
    }

    private final DemoDb demo;
    private final Db db;
    private final Waits waits;

    /**
     * @param demo  the demo tables
     * @param waits how requests wait for writes and delays
     */
    public AsyncEndpoints(DemoDb demo, Waits waits) {
        this.demo = demo;
        this.db = demo.db();
        this.waits = waits;
    }

    /**
     * Answers one request. Everything up to the first wait runs on the calling thread.
     *
     * @param method   the request method, e.g. {@code GET} (case-sensitive, RFC 9110 section 9.1)
     * @param path     the request path without the query string, e.g. {@code /queries}
     * @param rawQuery the query string without {@code ?}, still percent-encoded, or null
     * @return the reply; the stage never completes exceptionally (failures become 4xx/5xx replies)
     */
    public CompletionStage<Reply> handle(String method, String path, String rawQuery) {
        Http.Endpoint endpoint = Http.Endpoint.of(path);
        if (endpoint == null) return done(Reply.notFound(path));
        if (!"GET".equals(method)) return done(Reply.methodNotAllowed(method, path));
        try {
            return respond(endpoint, rawQuery).handle((reply, failure) -> failure == null ? reply : failure(failure));
        } catch (Params.BadParameter e) {
            return done(Reply.error(400, e.getMessage()));
        } catch (RuntimeException | Error e) {
            return done(failure(e));
        }
    }

    private CompletionStage<Reply> respond(Http.Endpoint endpoint, String rawQuery) {
        switch (endpoint) {
            case INDEX:
                return done(Reply.ok(endpoint, Bodies.INDEX));
            case PLAINTEXT:
                return done(Reply.ok(endpoint, Bodies.PLAINTEXT));
            case JSON:
                return done(Reply.ok(endpoint, Bodies.helloJson()));
            case DB:
                return done(Reply.ok(endpoint, Bodies.json(read(demo.randomWorld()))));
            case QUERIES:
                return done(Reply.ok(endpoint, Bodies.json(readRandomWorlds(Params.queriesParam(rawQuery)))));
            case FORTUNES:
                return done(Reply.ok(endpoint, Bodies.fortunesHtml(read(demo.allFortunes()))));
            case UPDATES: {
                World[] read = readRandomWorlds(Params.queriesParam(rawQuery));
                return waits.write(db.write(demo.updateWithNewRandomNumbers(read)))
                    .thenApply(updated -> Reply.ok(endpoint, Bodies.json(updated)));
            }
            case HELLO: {
                int ms = Params.delayParam(rawQuery);
                if (ms == 0) return done(Reply.ok(endpoint, Bodies.HELLO));
                return waits.sleep(ms).thenApply(slept -> Reply.ok(endpoint, Bodies.HELLO));
            }
            default:
                throw new IllegalStateException("endpoint without a handler: " + endpoint);
        }
    }

    /** @return {@code n} random World rows, one read each (TechEmpower test type 3) */
    private World[] readRandomWorlds(int n) {
        World[] rows = new World[n];
        for (int i = 0; i < n; i++) rows[i] = read(demo.randomWorld());
        return rows;
    }

    /** Runs a read query; {@link Db#read} completes before it returns, so join() never waits here. */
    private <R> R read(Query<R> query) {
        try {
            return db.read(query).join();
        } catch (CompletionException e) {
            throw rethrowable(e.getCause());
        }
    }

    /**
     * Maps a failure to its reply: {@link DbException.Overloaded} to 503 + {@code Retry-After: 1},
     * anything else to 500 (logged with its stack trace; the body stays short).
     *
     * @param failure the exception, possibly wrapped in a {@link CompletionException}
     */
    public static Reply failure(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof DbException.Overloaded) return Reply.overloaded();
        LOG.log(Level.SEVERE, "request failed", cause);
        return Reply.internalError();
    }

    private static RuntimeException rethrowable(Throwable t) {
        if (t instanceof RuntimeException) return (RuntimeException) t;
        if (t instanceof Error) throw (Error) t;
        return new CompletionException(t);
    }

    private static CompletionStage<Reply> done(Reply reply) {
        return CompletableFuture.completedFuture(reply);
    }
}

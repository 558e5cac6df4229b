package kiln.server;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

import kiln.http.Response;

/**
 * What an endpoint's logic returns: either its {@link Response}, or one wait (for a future, such as a
 * durable database write, or for a delay) and the rest of the logic to run after it. The logic is
 * written once (a {@link StepHandler}, as the demo's endpoints are); each front end runs it with its
 * own way of waiting:
 * <ul>
 *   <li>a Kilim fiber pauses on the future or in {@code Task.sleep}, and a Quasar fiber suspends
 *       ({@code FiberAsync}, {@code Fiber.sleep}): see their modules;</li>
 *   <li>a thread that may block (a blocking baseline, a virtual thread) waits in place:
 *       {@link #runBlocking};</li>
 *   <li>a front end whose threads must never block continues in callbacks: {@link #runAsync}.</li>
 * </ul>
 * A wait whose future fails, or a next step that throws, becomes the failure policy's response
 * ({@link Failures}), so running a step never throws.
 *
 * <pre>{@code
 * World[] rows = demo.randomWorlds(n);
 * return Step.after(db.write(demo.updateWithNewRandomNumbers(rows)), updated -> Step.of(Response.json(updated)));
 * }</pre>
 */
public final class Step {
    private final Response response;
    private final CompletableFuture<?> future;
    private final int sleepMs;
    private final Function<Object, Step> then;
    private final Object request;

    private Step(Response response, CompletableFuture<?> future, int sleepMs, Function<Object, Step> then, Object request) {
        this.response = response;
        this.future = future;
        this.sleepMs = sleepMs;
        this.then = then;
        this.request = request;
    }

    /**
     * The last step: the answer, with no wait before it. {@code return Step.of(Response.text("ok"));}
     *
     * @param response the answer, not null
     * @return a finished step: answer {@code response}
     */
    public static Step of(Response response) {
        return new Step(Objects.requireNonNull(response, "response"), null, 0, null, null);
    }

    /**
     * A wait and the rest of the logic after it:
     * {@code return Step.after(db.write(txn -> todos.put(txn, id, todo)), done -> Step.of(Response.noContent()));}.
     * On Kilim the fiber pauses, on a virtual thread or a blocking baseline the thread waits, on an
     * async front end {@code then} runs in a callback: the same logic on every front end.
     *
     * @param future what to wait for, e.g. {@code db.write(query)}
     * @param then   the rest of the logic, given the future's result; runs on the front end's
     *               thread after the wait (never on the thread that completed the future)
     * @return a step that waits for {@code future}; if it fails, the answer is the failure policy's.
     *         A future complete already (a read on LMDB, which runs inline) is not waited for: {@code then}
     *         runs now, on the calling thread, and its step is returned
     */
    @SuppressWarnings("unchecked")
    public static <T> Step after(CompletableFuture<T> future, Function<? super T, Step> then) {
        Step wait = new Step(null, future, 0, (Function<Object, Step>) then, null);
        return future.isDone() ? wait.next() : wait;
    }

    /**
     * @param ms   how long to wait, > 0
     * @param then the rest of the logic, run after the delay
     * @return a step that waits {@code ms} milliseconds without holding a thread where the front end can
     */
    public static Step afterSleep(int ms, Supplier<Step> then) {
        if (ms <= 0) throw new IllegalArgumentException("sleep must be > 0 ms, got " + ms);
        return new Step(null, null, ms, ignored -> then.get(), null);
    }

    /** @return this step, naming {@code request} in the log line of a failure after its wait */
    Step forRequest(Object request) {
        return response != null ? this : new Step(null, future, sleepMs, then, request);
    }

    /** @return true when this step is the answer: {@link #response()} is ready */
    public boolean isDone() {
        return response != null;
    }

    /** @return the answer, when {@link #isDone()} */
    public Response response() {
        return response;
    }

    /** @return the delay to wait, ms, when this step sleeps; 0 when it waits for {@link #future()} or is done */
    public int sleepMs() {
        return sleepMs;
    }

    /** @return the future to wait for, or null when this step sleeps or is done */
    public CompletableFuture<?> future() {
        return future;
    }

    /**
     * Runs the rest of the logic once the wait is over: the delay has passed, or {@link #future()}
     * is complete. Never throws: a failed future or a next step that throws gives the failure
     * policy's response.
     *
     * @return the next step
     * @throws IllegalStateException when called on a done step or before the future is complete
     */
    public Step next() {
        if (response != null) throw new IllegalStateException("the step is done");
        Object value = null;
        if (future != null) {
            if (!future.isDone()) throw new IllegalStateException("next() before the awaited future completed");
            try {
                value = future.get();
            } catch (ExecutionException e) {
                return of(Failures.toResponse(e.getCause(), request));
            } catch (InterruptedException e) {
                throw new IllegalStateException("unreachable: the future is done", e);
            }
        }
        try {
            return then.apply(value).forRequest(request);
        } catch (RuntimeException | Error e) {
            return of(Failures.toResponse(e, request));
        }
    }

    /**
     * Runs {@code step} to its response on the calling thread, which blocks in each wait: for the
     * thread-per-request baselines and for virtual threads (where blocking parks the virtual thread
     * and frees its carrier).
     *
     * @return the response; an interrupted wait gives 500
     */
    public static Response runBlocking(Step step) {
        while (!step.isDone()) {
            try {
                if (step.sleepMs > 0) {
                    Thread.sleep(step.sleepMs);
                } else {
                    step.future.handle((r, t) -> null).get();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Failures.toResponse(e, step.request);
            } catch (ExecutionException e) {
                throw new IllegalStateException("unreachable: handle() does not fail", e);
            }
            step = step.next();
        }
        return step.response;
    }

    /**
     * Runs {@code step} without ever blocking: the rest of the logic after each wait is handed to
     * {@code workers} (the front end's worker threads), so the database's writer thread and
     * the {@code timer} thread only signal.
     *
     * @param workers       where the logic continues after a wait
     * @param timer         schedules the ends of delays
     * @param send          receives the response: at once when the step is done, else on a
     *                      {@code workers} thread
     */
    public static void runAsync(Step step, Executor workers, ScheduledExecutorService timer, Consumer<Response> send) {
        if (step.isDone()) {
            send.accept(step.response);
        } else if (step.sleepMs > 0) {
            timer.schedule(() -> workers.execute(() -> runAsync(step.next(), workers, timer, send)),
                step.sleepMs, TimeUnit.MILLISECONDS);
        } else {
            step.future.whenComplete((r, t) -> workers.execute(() -> runAsync(step.next(), workers, timer, send)));
        }
    }

    @Override
    public String toString() {
        if (response != null) return "Step{" + response + '}';
        return sleepMs > 0 ? "Step{sleep " + sleepMs + " ms}" : "Step{after " + future + '}';
    }
}

package kiln.kilim;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.LongStream;

import kilim.Task;

import kiln.server.Threads;

/**
 * Watches what each carrier thread runs, so that the worst fiber trap — a handler that keeps its
 * carrier thread busy (a {@code Thread.sleep}, a blocking call, a long loop) — neither freezes the
 * server nor goes unsaid. One daemon thread, {@code kiln-blocked-carrier-checker}, looks at every carrier twice
 * per threshold (every {@link #tickMs} ms: 10 ms by default, so that a hold is seen 0-10 ms late);
 * when one fiber run has held a carrier's thread:
 * <ul>
 *   <li>for {@code handOffMs} (default 20 ms): it hands the carrier to a new thread
 *       ({@link Carriers#handOff}), so the carrier's other fibers, and on carrier 0 the accepting and
 *       reading of every connection, go on while the held thread finishes its fiber; at most
 *       {@value #MAX_HANDED_OFF} threads may be held so at once;</li>
 *   <li>for {@code reportMs} (default 100 ms): it logs, once per handler, what the thread is doing:
 *       its stack, the blocking call found in it, and the fiber way to do that instead;</li>
 *   <li>for {@code unhealthyMs} (default 5 s): {@link #problem()} says so, and {@code /healthz}
 *       answers 503 with it while it lasts.</li>
 * </ul>
 * The carriers' cost is a counter, a store and a compare-and-set per fiber run ({@link Carriers#runQueued}).
 *
 * <p>While the server is idle the watch rests: after {@value #QUIET_LOOKS} looks in a row that found
 * every carrier asleep (blocked in its select, so running no fiber) and no handed-off thread, it
 * parks until a carrier wakes up ({@link #carrierAwake}), instead of waking 100 times a second for
 * nothing. A carrier's wake-up costs a volatile read then, and one unpark per rest.
 */
final class BlockedCarrierChecker {
    private static final Logger LOG = Logger.getLogger(BlockedCarrierChecker.class.getName());
    /** Threads held by fibers after a hand-off, at most; past it a blocked carrier waits, as it would without hand-offs. */
    static final int MAX_HANDED_OFF = 64;

    /** Blocking calls a stack may show (a frame's class and method prefix), what they are, and what to do instead; the most specific first. */
    private static final String[][] ADVICE = {
        {"jdk.internal.net.http.", "a blocking HttpClient.send", "use HttpClient.sendAsync and Fibers.await(future, timeout)"},
        {"java.lang.Thread.sleep", "Thread.sleep", "use Fibers.sleep(ms): it pauses the fiber, not the carrier"},
        {"kiln.db.QueryFuture.join", "a database future's join()/get()", "use Fibers.await(future): it pauses the fiber until the result is in"},
        {"kiln.db.QueryFuture.get", "a database future's join()/get()", "use Fibers.await(future): it pauses the fiber until the result is in"},
        {"java.util.concurrent.CompletableFuture.waitingGet", "CompletableFuture.join()/get()", "use Fibers.await(future, timeout): it pauses the fiber until the future completes"},
        {"java.util.concurrent.CompletableFuture.timedGet", "CompletableFuture.join()/get()", "use Fibers.await(future, timeout): it pauses the fiber until the future completes"},
        {"java.util.concurrent.locks.LockSupport.park", "a lock, latch or blocking queue", "wait with a Kilim Mailbox or Cell (get() pauses the fiber), or run the blocking call with Fibers.blocking(() -> ...)"},
        {"java.lang.Object.wait", "Object.wait", "wait with a Kilim Mailbox or Cell (get() pauses the fiber), or run the blocking call with Fibers.blocking(() -> ...)"},
        {"sun.nio.ch.", "blocking I/O", "run the call with Fibers.blocking(() -> ...): it runs on a bounded thread pool and pauses the fiber until it returns"},
        {"java.net.", "blocking network I/O", "use an asynchronous client (e.g. HttpClient.sendAsync) and Fibers.await(future, timeout), or run the call with Fibers.blocking(() -> ...)"},
        {"java.io.", "blocking file or stream I/O", "run it with Fibers.blocking(() -> ...): it runs on a bounded thread pool and pauses the fiber until it returns"},
    };

    /**
     * A fiber run that has held a thread since {@code sinceMs} (the checker's clock): on a carrier, or
     * after a hand-off on the old thread, which is watched until it ends.
     */
    private record Held(Thread thread, String carrier, Task<?> fiber, long sinceMs) {
    }

    private final Carriers carriers;
    private final long reportMs;
    private final long handOffMs;
    private final long unhealthyMs;
    /** How often the checker looks, ms; 0 when it is off. */
    final long tickMs;
    private final Set<String> reported = ConcurrentHashMap.newKeySet();
    /** Per carrier, the run the checker saw last and since when (ms, its own clock); checker thread only. */
    private final long[] seenRun;
    private final long[] seenSince;
    /** Watch thread only. */
    private final List<Held> handedOff = new ArrayList<>();
    /** When the checker last looked (ms, its own clock), -1 before its first look; checker thread only. */
    private long lastLookMs = -1;
    private boolean capReported;
    private volatile String problem;
    /** The watch's thread, {@code kiln-blocked-carrier-checker}; null when it is off. */
    private final Thread thread;
    private volatile boolean stopping;
    /** True while the watch rests: the first carrier to wake clears it and unparks the watch. */
    private final AtomicBoolean resting = new AtomicBoolean();
    /** Looks in a row that found every carrier asleep and no held thread, after which the watch rests. */
    static final int QUIET_LOOKS = 10;

    /**
     * @param carriers    the carriers to watch
     * @param reportMs    how long one fiber run may hold a thread before it is reported, ms; 0: never
     * @param handOffMs   how long before its carrier is handed to a new thread, ms; 0: never (the
     *                    carrier's other fibers then wait for the held thread)
     * @param unhealthyMs how long before {@link #problem()} reports it, ms; 0: never
     */
    BlockedCarrierChecker(Carriers carriers, long reportMs, long handOffMs, long unhealthyMs) {
        this.carriers = carriers;
        this.reportMs = reportMs;
        this.handOffMs = handOffMs;
        this.unhealthyMs = unhealthyMs;
        this.seenRun = new long[carriers.count()];
        this.seenSince = new long[carriers.count()];
        long shortest = LongStream.of(reportMs, handOffMs, unhealthyMs).filter(ms -> ms > 0).min().orElse(0);
        tickMs = shortest == 0 ? 0 : Math.max(5, shortest / 2);
        thread = tickMs == 0 ? null : Threads.daemon("kiln-blocked-carrier-checker").newThread(this::watch);
        if (thread != null) carriers.onWake(this::carrierAwake);
    }

    void start() {
        if (thread != null) thread.start();
    }

    void stop() {
        stopping = true;
        if (thread != null) LockSupport.unpark(thread);
    }

    /** The watch's loop: a look every {@link #tickMs} ms, and a rest while every carrier sleeps. */
    private void watch() {
        int quiet = 0;
        while (!stopping) {
            LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(tickMs));
            if (stopping) return;
            carriers.readClock();
            try {
                look(System.nanoTime() / 1_000_000);
            } catch (RuntimeException e) {  // a bug here must not end the watch
                LOG.log(Level.SEVERE, "the blocked-carrier watch failed a look", e);
            }
            quiet = handedOff.isEmpty() && carriers.allAsleep() ? quiet + 1 : 0;
            if (quiet < QUIET_LOOKS) continue;
            quiet = 0;
            resting.set(true);
            // announced before the carriers are looked at again: one that wakes from now on sees it and unparks
            if (carriers.allAsleep() && !stopping) LockSupport.park(this);
            resting.set(false);
        }
    }

    /** @return whether the watch rests now (every carrier asleep); for tests */
    boolean resting() {
        return resting.get();
    }

    /** From a carrier that woke up: a resting watch looks again (the first such carrier unparks it). */
    void carrierAwake() {
        if (resting.get() && resting.compareAndSet(true, false)) LockSupport.unpark(thread);
    }

    /**
     * @return null while no fiber has held a thread for {@code unhealthyMs}; else which handler, on
     *         which thread, for how long, in one line (for {@code /healthz})
     */
    String problem() {
        return problem;
    }

    /**
     * One look at every carrier and every handed-off thread, on the checker thread, at {@code now} ms.
     * A look that comes more than two ticks after the last one means that the checker itself was
     * stopped (a garbage collection's pause stops every thread; an overloaded CPU may not run it):
     * then the carriers' fibers were stopped as well, so their clocks restart rather than count the
     * stop toward a hand-off.
     */
    void look(long now) {
        boolean stopped = lastLookMs >= 0 && now - lastLookMs > 2 * tickMs;
        lastLookMs = now;
        Held longest = null;
        for (int i = 0; i < seenRun.length; i++) {
            long run = carriers.run(i);
            if (run == 0 || run != seenRun[i] || stopped) {
                seenRun[i] = run;
                seenSince[i] = now;
                continue;
            }
            long heldMs = now - seenSince[i];
            Held held = new Held(carriers.thread(i), carriers.name(i), carriers.running(i), seenSince[i]);
            if (handOffMs > 0 && heldMs >= handOffMs && mayHandOff(i) && carriers.handOff(i, run) != null) {
                handedOff.add(held);  // looked at below, as a held thread
                seenRun[i] = 0;
                LOG.fine(() -> held.carrier + " handed to a new thread: a fiber held it for " + heldMs + " ms");
                continue;
            }
            check(held, heldMs);
            if (longest == null || held.sinceMs < longest.sinceMs) longest = held;
        }
        for (Iterator<Held> it = handedOff.iterator(); it.hasNext();) {
            Held h = it.next();
            if (!h.thread.isAlive()) {
                it.remove();
                continue;
            }
            check(h, now - h.sinceMs);
            if (longest == null || h.sinceMs < longest.sinceMs) longest = h;
        }
        long longestMs = longest == null ? 0 : now - longest.sinceMs;
        problem = unhealthyMs > 0 && longestMs >= unhealthyMs ? describe(longest, longestMs) + " (limit " + unhealthyMs + " ms)" : null;
    }

    /** @return whether another thread may be handed off; says once when the cap stops it */
    private boolean mayHandOff(int carrier) {
        if (handedOff.size() < MAX_HANDED_OFF) {
            capReported = false;
            return true;
        }
        if (!capReported) {
            capReported = true;
            LOG.warning(MAX_HANDED_OFF + " threads are held by blocked fibers already: " + carriers.name(carrier)
                + " is not handed off, and its other fibers wait until one of them returns. Run blocking calls with"
                + " Fibers.blocking(() -> ...), which bounds them on a pool of its own.");
        }
        return false;
    }

    private static String describe(Held h, long heldMs) {
        String handler = name(h.fiber);
        return (handler != null ? "the handler of " + handler : "a fiber") + " has held thread " + h.carrier + " for " + heldMs + " ms without pausing";
    }

    /** @return the handler a connection fiber runs now, e.g. {@code GET /todos/{id}}; another fiber's class; null between requests */
    private static String name(Task<?> fiber) {
        if (fiber instanceof ConnectionFiber c) return c.handlerName();
        return fiber == null ? null : "fiber " + fiber.getClass().getName();
    }

    /** Reports a run held beyond {@code reportMs}, once per handler. */
    private void check(Held h, long heldMs) {
        String handler = name(h.fiber);
        if (reportMs <= 0 || heldMs < reportMs || handler == null || reported.contains(handler)) return;
        StackTraceElement[] stack = h.thread.getStackTrace();
        // a cold start is slow once and not the handler's fault: not reported, so the handler's one
        // report is kept for a real trap (looked at again at the next tick)
        if (warmingUp(stack)) return;
        if (reported.add(handler)) LOG.warning(report(handler, h.carrier, heldMs, stack));
    }

    /** Frames of a cold start's one-time work: a class prefix, or a class and a method prefix after '#'. */
    private static final String[] WARM_UP = {
        "java.lang.ClassLoader", "jdk.internal.loader.", "java.lang.invoke.MethodHandleNatives",
        "java.lang.invoke.InnerClassLambdaMetafactory", "java.lang.invoke.LambdaForm", "jdk.internal.reflect.",
        "java.lang.Class#getDeclared", "java.lang.Class#getRecordComponents", "java.lang.Class#forName",
        // Jackson's first look at a type: introspection, and the (de)serializer it builds once
        "com.fasterxml.jackson.databind.introspect.", "com.fasterxml.jackson.databind.ser.BeanSerializerFactory",
        "com.fasterxml.jackson.databind.ser.BasicSerializerFactory", "com.fasterxml.jackson.databind.ser.SerializerCache",
        "com.fasterxml.jackson.databind.deser.BeanDeserializerFactory", "com.fasterxml.jackson.databind.deser.BasicDeserializerFactory",
        "com.fasterxml.jackson.databind.deser.DeserializerCache",
        // Jackson's first buffer recycler of a thread; the JCA's first look-up of an algorithm (a MAC, a digest)
        "com.fasterxml.jackson.core.JsonFactory#_getBufferRecycler", "com.fasterxml.jackson.core.util.BufferRecyclers",
        "javax.crypto.Mac#getInstance", "java.security.MessageDigest#getInstance", "sun.security.jca.",
    };

    /**
     * @return whether {@code stack} is in a cold start's one-time work: loading, linking or
     *         initializing a class, reflection, spinning a lambda, Jackson introspecting a type.
     *         Package-private for tests.
     */
    static boolean warmingUp(StackTraceElement[] stack) {
        for (StackTraceElement f : stack) {
            if (f.getMethodName().equals("<clinit>")) return true;
            String c = f.getClassName();
            for (String w : WARM_UP) {
                int hash = w.indexOf('#');
                if (hash < 0 ? c.startsWith(w) : c.equals(w.substring(0, hash)) && f.getMethodName().startsWith(w.substring(hash + 1))) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The warning for a thread held by {@code handler}, from its stack. Package-private for tests. */
    String report(String handler, String carrier, long busyMs, StackTraceElement[] stack) {
        String what = "a long computation";
        String instead = "split it into smaller steps, or run it with Fibers.blocking(() -> ...) and pause until it returns";
        // what kiln's own Fibers calls (a completed future's result, a callback registered) never blocks:
        // only the frames of its callers can be the blocking call
        int from = 0;
        for (int i = 0; i < stack.length; i++) {
            if (stack[i].getClassName().equals(Fibers.class.getName())) from = i + 1;
        }
        search:
        for (String[] a : ADVICE) {  // the most specific advice first: a blocking HttpClient.send parks in a CompletableFuture too
            for (int i = from; i < stack.length; i++) {
                StackTraceElement f = stack[i];
                if ((f.getClassName() + "." + f.getMethodName()).startsWith(a[0])) {
                    what = a[1];
                    instead = a[2];
                    break search;
                }
            }
        }
        StringBuilder s = new StringBuilder()
            .append("the handler of ").append(handler).append(" has held carrier thread ").append(carrier)
            .append(" for ").append(busyMs).append(" ms without pausing (threshold ").append(reportMs)
            .append(" ms): it is blocked in ").append(what).append(". In fiber code, ").append(instead).append(". ")
            .append(handOffMs > 0
                ? "The server handed the carrier's other fibers to a new thread after " + handOffMs + " ms, but each such"
                    + " handler holds a thread of its own while it blocks (at most " + MAX_HANDED_OFF + ")."
                : "Meanwhile every other connection on this carrier waits.")
            .append(" (Reported once per handler.)");
        for (StackTraceElement f : stack) s.append("\n\tat ").append(f);
        return s.toString();
    }
}

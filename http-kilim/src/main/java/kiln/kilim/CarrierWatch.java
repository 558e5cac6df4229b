package kiln.kilim;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

import kiln.server.Threads;

/**
 * Catches the worst fiber trap at run time: a handler that keeps its carrier thread busy (a
 * {@code Thread.sleep}, a blocking call, a long loop) stalls every other connection on that carrier,
 * and nothing else would say so. Each time a connection's fiber runs on a carrier, it marks the
 * carrier's {@link Slot} ({@link #enter}, {@link Slot#exit}: a counter and two volatile writes, no
 * clock); one daemon thread, {@code kiln-carrier-watch}, looks at the slots four times per
 * threshold and, when one fiber has run without pausing for longer than the threshold, logs once per
 * handler what the carrier is doing: its stack, the blocking call found in it, and the fiber way to
 * do that instead.
 */
final class CarrierWatch {
    private static final Logger LOG = Logger.getLogger(CarrierWatch.class.getName());
    private static final ThreadLocal<Slot> SLOT = new ThreadLocal<>();

    /** Blocking calls a stack may show, the first frame's class and method prefix, and what to do instead. */
    private static final String[][] ADVICE = {
        {"java.lang.Thread.sleep", "Thread.sleep", "use Fibers.sleep(ms): it pauses the fiber, not the carrier"},
        {"kiln.db.QueryFuture.", "a database future's join()/get()", "use Fibers.await(future): it pauses the fiber until the result is in"},
        {"java.util.concurrent.CompletableFuture.", "CompletableFuture.join()/get()", "use Fibers.await(future): it pauses the fiber until the future completes"},
        {"java.util.concurrent.locks.LockSupport.park", "a lock, latch or blocking queue", "wait with a Kilim Mailbox or Cell (get() pauses the fiber)"},
        {"java.lang.Object.wait", "Object.wait", "wait with a Kilim Mailbox or Cell (get() pauses the fiber)"},
        {"sun.nio.ch.", "blocking I/O", "run the call on a thread pool and pause on its future with Fibers.await(CompletableFuture.supplyAsync(..., pool))"},
        {"java.net.", "blocking network I/O", "use an asynchronous client (e.g. HttpClient.sendAsync) and Fibers.await its future, or run the call on a thread pool and Fibers.await that"},
        {"java.io.", "blocking file or stream I/O", "run it on a thread pool and pause on its future with Fibers.await(CompletableFuture.supplyAsync(..., pool))"},
    };

    /** What one carrier thread is running; written by the carrier, read by the watch thread. */
    static final class Slot {
        final Thread carrier;
        /** Counts the fiber runs on this carrier; written only by the carrier. */
        volatile long runs;
        /** The connection whose fiber runs now, or null between runs. */
        volatile ConnectionFiber running;
        /** The watch thread's view: the run it saw last and since when (its own clock). */
        long seenRun = -1;
        long seenSince;

        Slot(Thread carrier) {
            this.carrier = carrier;
        }

        void exit() {
            running = null;
        }
    }

    private final long thresholdMs;
    private final List<Slot> slots = new CopyOnWriteArrayList<>();
    private final Set<String> reported = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService timer;

    /**
     * @param thresholdMs how long one fiber may hold its carrier before it is reported, ms; 0 turns
     *                    the watch off ({@link #enter} then costs a thread-local read)
     */
    CarrierWatch(long thresholdMs) {
        this.thresholdMs = thresholdMs;
        if (thresholdMs <= 0) {
            timer = null;
            return;
        }
        long tick = Math.max(5, thresholdMs / 4);
        timer = Executors.newSingleThreadScheduledExecutor(Threads.daemon("kiln-carrier-watch"));
        timer.scheduleWithFixedDelay(this::look, tick, tick, TimeUnit.MILLISECONDS);
    }

    /** Marks the calling carrier as running {@code connection}'s fiber; call {@link Slot#exit} after. */
    Slot enter(ConnectionFiber connection) {
        Slot slot = SLOT.get();
        if (slot == null) {
            slot = new Slot(Thread.currentThread());
            SLOT.set(slot);
            if (timer != null) slots.add(slot);
        }
        slot.runs++;  // one writer per slot: the carrier itself
        slot.running = connection;
        return slot;
    }

    void stop() {
        if (timer != null) timer.shutdownNow();
    }

    /** One look at every carrier, on the watch thread. */
    private void look() {
        long now = System.nanoTime() / 1_000_000;
        for (Slot s : slots) {
            ConnectionFiber c = s.running;
            long run = s.runs;
            if (c == null || run != s.seenRun) {
                s.seenRun = c == null ? -1 : run;
                s.seenSince = now;
                continue;
            }
            long busyMs = now - s.seenSince;
            String handler = c.handlerName();
            if (busyMs < thresholdMs || handler == null || reported.contains(handler)) continue;
            StackTraceElement[] stack = s.carrier.getStackTrace();
            // A first request loads, links and initializes classes (Jackson's ObjectMapper, LMDB...):
            // slow once, not the handler's fault.
            if (loadingClasses(stack)) continue;
            if (reported.add(handler)) LOG.warning(report(handler, s.carrier, busyMs, stack));
        }
    }

    private static boolean loadingClasses(StackTraceElement[] stack) {
        for (StackTraceElement f : stack) {
            String c = f.getClassName();
            if (c.startsWith("java.lang.ClassLoader") || c.startsWith("jdk.internal.loader.") || c.equals("java.lang.invoke.MethodHandleNatives")
                || f.getMethodName().equals("<clinit>")) {
                return true;
            }
        }
        return false;
    }

    /** The warning for a carrier held by {@code handler}, from its stack. Package-private for tests. */
    String report(String handler, Thread carrier, long busyMs, StackTraceElement[] stack) {
        String what = "a long computation";
        String instead = "split it into smaller steps, or run it on a thread pool and pause on its future";
        search:
        for (StackTraceElement f : stack) {
            String frame = f.getClassName() + "." + f.getMethodName();
            for (String[] a : ADVICE) {
                if (frame.startsWith(a[0])) {
                    what = a[1];
                    instead = a[2];
                    break search;
                }
            }
        }
        StringBuilder s = new StringBuilder()
            .append("the handler of ").append(handler).append(" has held carrier thread ").append(carrier.getName())
            .append(" for ").append(busyMs).append(" ms without pausing (threshold ").append(thresholdMs)
            .append(" ms): it is blocked in ").append(what).append(". In fiber code, ").append(instead)
            .append(". Meanwhile every other connection on this carrier waits. (Reported once per handler.)");
        for (StackTraceElement f : stack) s.append("\n\tat ").append(f);
        return s.toString();
    }
}

package kiln.kilim;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Level;

import kilim.Scheduler;
import kilim.Task;
import kilim.timerservice.Timer;

/**
 * kiln's Kilim scheduler: the carrier threads that run the server's fibers, each with its own run
 * queue. Carrier 0 is the selector thread ({@link Poller}): it runs the fibers queued to it between
 * two selects, so with one carrier (a one-core VPS) a request is read, handled and answered on one
 * thread, with no hand-off to another thread and no wake-up, as nginx's worker does. Further carriers
 * ({@code kiln-carrier-N}) park when their queue is empty.
 *
 * <p>It replaces Kilim's {@code AffineScheduler}, which ran every fiber step through a
 * {@code ThreadPoolExecutor} (a {@code FutureTask} and a locked queue node per step) and, after
 * each step, its timer service (a lock and a 100-slot array per step).
 *
 * <p>Where a fiber runs: a fiber started or resumed on a carrier other than the selector thread
 * stays on that carrier; one started or resumed elsewhere (the selector, the database's writer
 * thread, a plain thread) goes to the carriers in turn. Timers ({@code Task.sleep}, a
 * {@code Mailbox.get} with a timeout) are kept and fired by carrier 0. Fibers cannot be pinned to a
 * carrier ({@link #isPinnable}): Kilim moves a fiber that holds a {@code kilim.ReentrantLock} to its
 * default pinnable scheduler.
 */
final class Carriers extends Scheduler {
    // java.util.logging's Logger by its full name: kilim.Scheduler has a nested Logger of its own
    private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(Carriers.class.getName());
    /** Fibers a carrier runs before it looks at its selector, timers or queue again. */
    private static final int BATCH = 256;
    /** Lingering cancelled timers tolerated before they are swept out of the heap. */
    private static final int TIMER_SWEEP_MIN = 1024;
    private static final ThreadLocal<Carrier> CURRENT = new ThreadLocal<>();

    private final Carrier[] carriers;
    private final AtomicInteger turn = new AtomicInteger();
    /** Timers set from threads other than carrier 0, for carrier 0 to take into {@link #heap}. */
    private final ConcurrentLinkedQueue<Deadline> incomingTimers = new ConcurrentLinkedQueue<>();
    /** Carrier 0's timers, earliest first; only carrier 0 touches it. */
    private final PriorityQueue<Deadline> heap = new PriorityQueue<>();
    private int sweepAt = TIMER_SWEEP_MIN;
    private volatile boolean stopping;

    /** A timer as it was set: it fires only if it still reads {@code at} (Kilim re-sets and cancels timers in place). */
    private record Deadline(long at, Timer timer) implements Comparable<Deadline> {
        @Override
        public int compareTo(Deadline o) {
            return Long.compare(at, o.at);
        }

        boolean live() {
            return timer.getExecutionTime() == at;
        }
    }

    /** One carrier thread's run queue and how to wake it. */
    private static final class Carrier {
        final int index;
        final ConcurrentLinkedQueue<Task> queue = new ConcurrentLinkedQueue<>();
        /** True while the carrier is about to block or blocked: a scheduler of work must wake it. */
        final AtomicBoolean sleeping = new AtomicBoolean();
        /** Wakes the carrier from its block: unpark, or the selector's wakeup for carrier 0. */
        Runnable wakeup;
        Thread thread;

        Carrier(int index) {
            this.index = index;
        }
    }

    /**
     * @param threads carrier threads, >= 1; carrier 0 is the selector thread, given by
     *                {@link #selectorThread} before {@link #start}
     */
    Carriers(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        carriers = new Carrier[threads];
        for (int i = 0; i < threads; i++) carriers[i] = new Carrier(i);
    }

    /**
     * Makes {@code thread} carrier 0; {@code wakeup} must make its blocking select return. The
     * thread's loop calls {@link #runQueued}, {@link #fireTimers} and {@link #prepareToSleep}.
     */
    void selectorThread(Thread thread, Runnable wakeup) {
        carriers[0].thread = thread;
        carriers[0].wakeup = wakeup;
    }

    /** Starts carriers 1..n-1 ({@code kiln-carrier-N}); carrier 0 is started by its owner. */
    void start() {
        for (int i = 1; i < carriers.length; i++) {
            Carrier c = carriers[i];
            Thread t = new Thread(() -> loop(c), "kiln-carrier-" + i);
            t.setDaemon(true);
            c.thread = t;
            c.wakeup = () -> LockSupport.unpark(t);
            t.start();
        }
    }

    /** The loop of carriers 1..n-1: run what is queued, park when nothing is. */
    private void loop(Carrier c) {
        CURRENT.set(c);
        while (!stopping) {
            if (runQueued(c) > 0) continue;
            c.sleeping.set(true);
            if (c.queue.isEmpty() && !stopping) LockSupport.park(this);
            c.sleeping.set(false);
        }
    }

    /** Called on carrier 0's thread once, before its loop. */
    void enterSelectorThread() {
        CURRENT.set(carriers[0]);
    }

    /**
     * Runs up to {@link #BATCH} fibers queued to carrier {@code index}; on that carrier's thread.
     *
     * @return how many ran
     */
    int runQueued(int index) {
        return runQueued(carriers[index]);
    }

    private int runQueued(Carrier c) {
        int ran = 0;
        Task t;
        while (ran < BATCH && (t = c.queue.poll()) != null) {
            ran++;
            try {
                t.run();
            } catch (Throwable e) {  // Task.run logs a fiber's own failures; this keeps the carrier alive
                LOG.log(Level.SEVERE, "a fiber failed outside its own error handling on " + Thread.currentThread().getName(), e);
            }
        }
        return ran;
    }

    /**
     * Carrier 0 is about to block in select: marks it sleeping, so that work queued from now on
     * wakes it. Call {@link #awake} after the select.
     *
     * @return how long it may block, ms: 0 = do not block (work is queued), -1 = until woken,
     *         else until the next timer
     */
    long prepareToSleep() {
        Carrier c = carriers[0];
        c.sleeping.set(true);
        if (!c.queue.isEmpty() || !incomingTimers.isEmpty() || stopping) return 0;
        Deadline next = heap.peek();
        if (next == null) return -1;
        return Math.max(1, next.at - System.currentTimeMillis());
    }

    /** Carrier 0 returned from its select. */
    void awake() {
        carriers[0].sleeping.set(false);
    }

    /**
     * For wakeups of the selector by its own causes (interest changes, closed channels): claims the
     * wakeup if carrier 0 is blocked or about to block and none is on its way yet.
     *
     * @return true when the caller must call {@code selector.wakeup()}
     */
    boolean claimSelectorWakeup() {
        return claimWakeup(carriers[0]);
    }

    /** @return true when {@code c} sleeps or is about to, and this caller is the one to wake it */
    private static boolean claimWakeup(Carrier c) {
        return c.sleeping.get() && c.sleeping.compareAndSet(true, false);
    }

    /** Fires carrier 0's due timers (each resumes its fiber); on carrier 0's thread. */
    void fireTimers() {
        for (Deadline d; (d = incomingTimers.poll()) != null;) heap.add(d);
        if (heap.isEmpty()) return;
        long now = System.currentTimeMillis();
        for (Deadline d; (d = heap.peek()) != null && d.at <= now;) {
            heap.poll();
            if (d.live()) d.timer.es.onEvent(null, Timer.timedOut);
        }
        if (heap.size() >= sweepAt) {
            heap.removeIf(d -> !d.live());  // cancelled or re-set: a Mailbox.get(timeout) that got its message
            sweepAt = Math.max(TIMER_SWEEP_MIN, 2 * heap.size());
        }
    }

    /**
     * Queues {@code t} on carrier {@code index}, or (index < 0) on the calling carrier if it is not
     * the selector, else on the carriers in turn; wakes the carrier if it sleeps. From any thread.
     */
    @Override
    public void schedule(int index, Task t) {
        Carrier c;
        if (index >= 0) {
            c = carriers[index % carriers.length];
        } else {
            c = CURRENT.get();
            if (c == null || (c.index == 0 && carriers.length > 1)) {
                c = carriers[Math.floorMod(turn.getAndIncrement(), carriers.length)];
            }
        }
        c.queue.add(t);
        if (claimWakeup(c)) c.wakeup.run();
    }

    /** Keeps a timer ({@code Task.sleep}, a timed {@code Mailbox.get}) for carrier 0 to fire. From any thread. */
    @Override
    public void scheduleTimer(Timer timer) {
        long at = timer.getExecutionTime();
        if (at < 0) return;  // cancelled already
        Deadline d = new Deadline(at, timer);
        Carrier zero = carriers[0];
        if (CURRENT.get() == zero) {
            heap.add(d);
        } else {
            incomingTimers.add(d);
            if (claimWakeup(zero)) zero.wakeup.run();
        }
    }

    /**
     * @return whether other fibers wait in the calling carrier's run queue: a fiber that yields then
     *         waits one turn of the queue, a busy carrier's cheap way to let a client's next request
     *         arrive; on an idle carrier a yield would only spin
     */
    static boolean othersQueued() {
        Carrier c = CURRENT.get();
        return c != null && !c.queue.isEmpty();
    }

    /** @return true on a carrier thread of a running server: fiber code, which must never block */
    static boolean onCarrier() {
        return CURRENT.get() != null;
    }

    /** Fibers cannot be pinned to one carrier: Kilim moves such a fiber to its default pinnable scheduler. */
    @Override
    public boolean isPinnable() {
        return false;
    }

    @Override
    public boolean isEmptyish() {
        for (Carrier c : carriers) {
            if (!c.queue.isEmpty()) return false;
        }
        return true;
    }

    @Override
    public int numThreads() {
        return carriers.length;
    }

    /** Waits (up to 10 s) until no fiber is queued, then shuts down; pending timers are dropped. */
    @Override
    public void idledown() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!isEmptyish() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
        shutdown();
    }

    /** Stops carriers 1..n-1 (carrier 0 stops with its selector); queued fibers are dropped. */
    @Override
    public void shutdown() {
        super.shutdown();
        stopping = true;
        List<Thread> threads = new ArrayList<>();
        for (int i = 1; i < carriers.length; i++) {
            Carrier c = carriers[i];
            if (c.thread == null) continue;
            LockSupport.unpark(c.thread);
            threads.add(c.thread);
        }
        for (Thread t : threads) {
            try {
                t.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}

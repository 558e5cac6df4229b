package kiln.kilim;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Level;

import kilim.Scheduler;
import kilim.Task;
import kilim.timerservice.Timer;
import kiln.server.LoopClock;

/**
 * kiln's Kilim scheduler: the carrier threads that run the server's fibers, each with its own run
 * queue. In the server every carrier is also a selector thread ({@link Poller}): it runs the fibers
 * queued to it between two selects, so a request is read, handled and answered on one thread, with
 * no hand-off to another thread and no wake-up, as each of nginx's workers does. A carrier given no
 * selector loop ({@link #selectorLoop}) parks when its queue is empty.
 *
 * <p>It replaces Kilim's {@code AffineScheduler}, which ran every fiber step through a
 * {@code ThreadPoolExecutor} (a {@code FutureTask} and a locked queue node per step) and, after
 * each step, its timer service (a lock and a 100-slot array per step).
 *
 * <p>Where a fiber runs: a {@link Homed} fiber (a connection's) always runs on its home carrier,
 * the one whose selector polls its socket. Another fiber started or resumed on a carrier other
 * than carrier 0 stays on that carrier; one started or resumed elsewhere (carrier 0, which fires
 * the timers, the database's writer thread, a plain thread) goes to the carriers in turn. Timers ({@code Task.sleep}, a
 * {@code Mailbox.get} with a timeout) are kept and fired by carrier 0. Fibers cannot be pinned to a
 * carrier ({@link #isPinnable}): Kilim moves a fiber that holds a {@code kilim.ReentrantLock} to its
 * default pinnable scheduler.
 *
 * <h2>Hand-off</h2>
 * A carrier is a run queue and its selector's duties owned by one thread at a time. A fiber that
 * holds its thread (a blocking call, a long loop: the handler's bug, not the server's) would stall
 * every other fiber of that carrier and the reading of its connections, and on carrier 0 the
 * accepting of every connection. So the {@link BlockedCarrierChecker} hands such a carrier to a new thread
 * ({@link #handOff}), as Go's runtime hands a processor to another thread when one blocks in a
 * system call: the queued fibers, the selector and the timers go on there at once. The old thread
 * finishes its fiber's step whenever the call returns, sees that the carrier is no longer its own,
 * and ends. Each run of a fiber is numbered; the owner clears the number with a compare-and-set
 * after the run, and the watch takes the carrier with a compare-and-set on the number it saw, so
 * exactly one of them wins.
 */
final class Carriers extends Scheduler {
    // java.util.logging's Logger by its full name: kilim.Scheduler has a nested Logger of its own
    private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(Carriers.class.getName());
    /** Fibers a carrier runs before it looks at its selector, timers or queue again. */
    private static final int BATCH = 256;
    /** Lingering cancelled timers tolerated before they are swept out of the heap. */
    private static final int TIMER_SWEEP_MIN = 1024;
    /** The carrier a thread was made for; a thread that lost it in a hand-off keeps it (its fiber is still fiber code) but no longer owns it. */
    private static final ThreadLocal<Carrier> CURRENT = new ThreadLocal<>();

    private final Carrier[] carriers;
    /** Told of each carrier's wake-up (the blocked-carrier watch, so that it can rest while all sleep); null for none. Set before the threads start. */
    private Runnable onWake;
    /** What {@link #readClock} reads; null when no clock is kept. */
    private LoopClock clock;
    private final AtomicInteger turn = new AtomicInteger();
    /** Timers set from any thread, for carrier 0 to take into {@link #heap}. */
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

    /**
     * A fiber that must run on one carrier: a connection's, whose socket that carrier's selector
     * polls, so that its reads, writes and waits stay on one thread and in one CPU's caches.
     */
    interface Homed {
        /** @return the index of the carrier the fiber runs on */
        int home();
    }

    /** One carrier: its run queue, the thread that owns it now, and how to wake that thread. */
    private static final class Carrier {
        final int index;
        final String name;
        final ConcurrentLinkedQueue<Task> queue = new ConcurrentLinkedQueue<>();
        /** True while the carrier is about to block or blocked: a scheduler of work must wake it. */
        final AtomicBoolean sleeping = new AtomicBoolean();
        /** The number of the fiber run in progress, 0 between runs; see "Hand-off" above. */
        final AtomicLong run = new AtomicLong();
        /** Numbers the runs; only the owning thread writes it (a hand-off publishes it to the next owner). */
        long runs;
        /** The fiber of the run in progress, for the watch's report; published by {@link #run}'s release. */
        Task<?> running;
        /** Wakes the owner from its block: unpark, or the selector's wakeup for a selector carrier. */
        Runnable wakeup;
        /** What the owner runs: a poller's loop ({@link #selectorLoop}), else {@link #loop}. */
        Runnable body;
        /** True when the body is a poller's loop ({@link #selectorLoop}), which stops with its poller. */
        boolean selector;
        /** The thread that owns the carrier now; a hand-off gives it a new one. */
        volatile Thread thread;

        Carrier(int index, String name) {
            this.index = index;
            this.name = name;
        }

        boolean ownedByCaller() {
            return thread == Thread.currentThread();
        }
    }

    /**
     * @param threads carrier threads, >= 1; a selector carrier's loop is given by
     *                {@link #selectorLoop} before {@link #start}
     */
    Carriers(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        carriers = new Carrier[threads];
        for (int i = 0; i < threads; i++) {
            Carrier c = new Carrier(i, "kiln-carrier-" + i);
            c.body = () -> loop(c);
            c.wakeup = () -> LockSupport.unpark(c.thread);
            carriers[i] = c;
        }
    }

    /**
     * Makes carrier {@code index} a selector: its thread, named {@code name}, runs {@code loop}, which
     * calls {@link #runQueued}, (carrier 0) {@link #fireTimers}, {@link #prepareToSleep} and
     * {@link #awake}, and must return at once when {@link #runQueued} says the carrier was handed off;
     * {@code wakeup} must make its blocking select return. Call before {@link #start}.
     */
    void selectorLoop(int index, String name, Runnable loop, Runnable wakeup) {
        Carrier c = new Carrier(index, name);
        c.body = loop;
        c.wakeup = wakeup;
        c.selector = true;
        carriers[index] = c;
    }

    /** Starts every carrier's thread. */
    void start() {
        for (Carrier c : carriers) startThread(c);
    }

    /** Gives {@code c} a new thread and starts it; carrier 0's is not a daemon (it keeps a server's JVM alive). */
    private void startThread(Carrier c) {
        Thread t = new Thread(() -> {
            CURRENT.set(c);
            c.body.run();
        }, c.name);
        t.setDaemon(c.index > 0);
        c.thread = t;
        t.start();
    }

    /** The loop of a carrier without a selector: run what is queued, park when nothing is; ends when stopping or handed off. */
    private void loop(Carrier c) {
        while (!stopping) {
            int ran = runQueued(c);
            if (ran < 0) return;
            if (ran > 0) continue;
            c.sleeping.set(true);
            if (c.queue.isEmpty() && !stopping) LockSupport.park(this);
            woke(c);
        }
    }

    /**
     * Runs up to {@link #BATCH} fibers queued to carrier {@code index}; on the thread that owns it.
     *
     * @return how many ran, or -1 when a fiber held this thread so long that the carrier was handed
     *         to a new thread meanwhile: the caller must then leave the carrier's loop at once
     */
    int runQueued(int index) {
        return runQueued(carriers[index]);
    }

    private int runQueued(Carrier c) {
        int ran = 0;
        Task t;
        while (ran < BATCH && (t = c.queue.poll()) != null) {
            ran++;
            if (!run(c, t)) return -1;
        }
        return ran;
    }

    /**
     * Runs fiber {@code t} on carrier {@code index} now, on the thread that owns it, as if it had
     * been queued and its turn had come: how a poller serves a connection the moment its select
     * reports it, so that what the request holds dies young, before the next collection, instead
     * of waiting in the run queue. The caller must have marked the fiber running, as Kilim's
     * {@code Task.resume} does before it queues one.
     *
     * @return false when the fiber held this thread so long that the carrier was handed to a new
     *         thread meanwhile: the caller must then leave the carrier's loop at once
     */
    boolean runNow(int index, Task t) {
        return run(carriers[index], t);
    }

    /** One run of a fiber on {@code c}, numbered for the watch; false when {@code c} was handed off meanwhile. */
    private boolean run(Carrier c, Task t) {
        long run = ++c.runs;
        c.running = t;
        c.run.lazySet(run);  // a plain store on x86: the watch may see it a little late, which only delays a hand-off
        try {
            t.run();
        } catch (Throwable e) {  // Task.run logs a fiber's own failures; this keeps the carrier alive
            LOG.log(Level.SEVERE, "a fiber failed outside its own error handling on " + Thread.currentThread().getName(), e);
        }
        if (!c.run.compareAndSet(run, 0)) return false;  // handed off: the carrier is another thread's now
        c.running = null;
        return true;
    }

    /** @return carrier {@code index}'s run in progress (0: none), for the {@link BlockedCarrierChecker} */
    long run(int index) {
        return carriers[index].run.get();
    }

    /** @return the fiber of carrier {@code index}'s run in progress, read after {@link #run(int)} saw it; may be stale */
    Task<?> running(int index) {
        return carriers[index].running;
    }

    /** @return the thread that owns carrier {@code index} now */
    Thread thread(int index) {
        return carriers[index].thread;
    }

    /** @return carrier {@code index}'s name, e.g. {@code kiln-selector}, {@code kiln-carrier-1} */
    String name(int index) {
        return carriers[index].name;
    }

    /** @return the number of carriers */
    int count() {
        return carriers.length;
    }

    /**
     * Gives carrier {@code index} to a new thread if its fiber run {@code run} is still in progress:
     * its queued fibers, its selector and (carrier 0) the timers go on there at once; the old
     * thread ends once its fiber pauses or finishes. From the watch thread.
     *
     * @return the old thread, still held by the fiber; null when the run ended meanwhile (nothing done)
     */
    Thread handOff(int index, long run) {
        Carrier c = carriers[index];
        if (run == 0 || stopping || !c.run.compareAndSet(run, 0)) return null;
        Thread old = c.thread;
        old.setName(c.name + " (handed off)");
        c.running = null;
        startThread(c);  // its loop first runs what was queued while the old thread was held (no wakeup was due then)
        return old;
    }

    /**
     * Selector carrier {@code index} is about to block in select: marks it sleeping, so that work
     * queued from now on wakes it. Call {@link #awake} after the select.
     *
     * @return how long it may block, ms: 0 = do not block (work is queued), -1 = until woken,
     *         else (carrier 0) until the next timer
     */
    long prepareToSleep(int index) {
        Carrier c = carriers[index];
        c.sleeping.set(true);
        if (!c.queue.isEmpty() || stopping || (index == 0 && !incomingTimers.isEmpty())) return 0;
        Deadline next = index == 0 ? heap.peek() : null;
        if (next == null) return -1;
        return Math.max(1, next.at - System.currentTimeMillis());
    }

    /** Selector carrier {@code index} returned from its select. */
    void awake(int index) {
        woke(carriers[index]);
    }

    /** Carrier {@code c} woke up: no longer sleeping, and a resting watch looks again. */
    private void woke(Carrier c) {
        c.sleeping.set(false);
        Runnable r = onWake;
        if (r != null) r.run();
    }

    /** @return whether every carrier is about to block or blocked (in its select, or parked), for the watch's rest */
    boolean allAsleep() {
        for (Carrier c : carriers) {
            if (!c.sleeping.get()) return false;
        }
        return true;
    }

    /** Sets the clock the carriers' loops read ({@link #readClock}); before {@link #start}. */
    void keepClock(LoopClock clock) {
        this.clock = clock;
    }

    /**
     * Reads the loop's clock, if one is kept: a poller as its poll returns, before it serves what
     * was reported; the blocked-carrier watch at each look, so that a long turn does not leave the
     * clock behind.
     */
    void readClock() {
        LoopClock c = clock;
        if (c != null) c.tick();
    }

    /** Sets what each carrier's wake-up runs, on the carrier's thread (it must be quick); before {@link #start}. */
    void onWake(Runnable r) {
        onWake = r;
    }

    /**
     * For wakeups of a selector by its own causes (interest changes, closed channels, connections
     * dealt to it): claims the wakeup if carrier {@code index} is blocked or about to block and none
     * is on its way yet.
     *
     * @return true when the caller must call {@code selector.wakeup()}
     */
    boolean claimSelectorWakeup(int index) {
        return claimWakeup(carriers[index]);
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
     * Queues {@code t} on carrier {@code index}, or (index < 0) on its home carrier if it is
     * {@link Homed}, else on the calling carrier if it is not carrier 0, else on the carriers in
     * turn; wakes the carrier if it sleeps. From any thread.
     */
    @Override
    public void schedule(int index, Task t) {
        Carrier c;
        if (index >= 0) {
            c = carriers[index % carriers.length];
        } else if (t instanceof Homed h) {
            c = carriers[h.home()];
        } else {
            c = CURRENT.get();
            if (c == null || (c.index == 0 && carriers.length > 1) || !c.ownedByCaller()) {
                c = carriers[Math.floorMod(turn.getAndIncrement(), carriers.length)];
            }
        }
        c.queue.add(t);
        if (claimWakeup(c)) c.wakeup.run();
    }

    /**
     * Keeps a timer ({@code Task.sleep}, a timed {@code Mailbox.get}) for carrier 0 to fire. From any
     * thread. Fiber code sets timers, so even on carrier 0 they go through {@link #incomingTimers}:
     * the carrier may be handed to another thread while the fiber runs.
     */
    @Override
    public void scheduleTimer(Timer timer) {
        long at = timer.getExecutionTime();
        if (at < 0) return;  // cancelled already
        incomingTimers.add(new Deadline(at, timer));
        Carrier zero = carriers[0];
        if (claimWakeup(zero)) zero.wakeup.run();
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

    /** Stops the carriers without a selector (a selector carrier stops with its poller); queued fibers are dropped. */
    @Override
    public void shutdown() {
        super.shutdown();
        stopping = true;
        List<Thread> threads = new ArrayList<>();
        for (Carrier c : carriers) {
            Thread t = c.thread;
            if (t == null || c.selector) continue;
            LockSupport.unpark(t);
            threads.add(t);
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

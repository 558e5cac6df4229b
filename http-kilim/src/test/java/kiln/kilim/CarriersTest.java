package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import kilim.Mailbox;
import kilim.Pausable;
import kilim.Task;

/**
 * kiln's Kilim scheduler without sockets: carrier 0's loop is driven here as the {@link Poller}
 * drives it (run the queue, fire timers, block until woken or the next timer), with a park in
 * place of the select.
 */
class CarriersTest {
    private Carriers carriers;
    private BlockedCarrierChecker watch;
    private volatile boolean stop;

    private void start(int threads) {
        carriers = new Carriers(threads);
        carriers.selectorLoop(0, "test-carrier-0", () -> {
            while (!stop) {
                if (carriers.runQueued(0) < 0) return;
                carriers.fireTimers();
                long ms = carriers.prepareToSleep(0);
                if (ms < 0) {
                    LockSupport.park();
                } else if (ms > 0) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(ms));
                }
                carriers.awake(0);
            }
        }, () -> LockSupport.unpark(carriers.thread(0)));
        carriers.start();
    }

    @AfterEach
    void stop() throws InterruptedException {
        if (watch != null) watch.stop();
        stop = true;
        carriers.shutdown();
        Thread zero = carriers.thread(0);
        LockSupport.unpark(zero);
        zero.join(2_000);
    }

    /** Sleeps, then records its name and which carrier woke it. */
    static final class Sleeper extends Task<Object> {
        private final String name;
        private final long ms;
        private final ConcurrentLinkedQueue<String> woke;
        private final CountDownLatch done;

        Sleeper(String name, long ms, ConcurrentLinkedQueue<String> woke, CountDownLatch done) {
            this.name = name;
            this.ms = ms;
            this.woke = woke;
            this.done = done;
        }

        @Override
        public void execute() throws Pausable {
            Task.sleep(ms);
            woke.add(name + "@" + Thread.currentThread().getName());
            done.countDown();
        }
    }

    private void spawn(Task<?> t) {
        t.setScheduler(carriers);
        t.start();
    }

    @Test
    void fibersStartedFromAPlainThreadRunOnEveryCarrierAndWakeFromTheirSleeps() throws Exception {
        start(2);
        ConcurrentLinkedQueue<String> woke = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(1_000);
        for (int i = 0; i < 1_000; i++) spawn(new Sleeper("f" + i, 1 + i % 20, woke, done));
        assertTrue(done.await(20, TimeUnit.SECONDS), () -> (1_000 - done.getCount()) + " of 1000 sleeping fibers woke");
        long onZero = woke.stream().filter(s -> s.endsWith("@test-carrier-0")).count();
        long onOne = woke.stream().filter(s -> s.endsWith("@kiln-carrier-1")).count();
        assertEquals(1_000, onZero + onOne, () -> "fibers ran elsewhere: " + woke);
        assertTrue(onZero > 0 && onOne > 0, () -> "fibers from a plain thread go to the carriers in turn: " + onZero + " on 0, " + onOne + " on 1");
    }

    @Test
    void timersFireInTheirOrder() throws Exception {
        start(1);
        ConcurrentLinkedQueue<String> woke = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(3);
        spawn(new Sleeper("late", 300, woke, done));
        spawn(new Sleeper("early", 10, woke, done));
        spawn(new Sleeper("middle", 150, woke, done));
        assertTrue(done.await(10, TimeUnit.SECONDS), "three sleepers woke");
        assertEquals(List.of("early", "middle", "late"), woke.stream().map(s -> s.substring(0, s.indexOf('@'))).toList());
    }

    /** Waits for a message with a 60 s timeout that does not expire, then sleeps 5 ms: Kilim re-sets the same timer, which must fire at its new time. */
    static final class Receiver extends Task<Object> {
        final Mailbox<String> box = new Mailbox<>();
        volatile String got;
        final CountDownLatch done = new CountDownLatch(1);

        @Override
        public void execute() throws Pausable {
            got = box.get(60_000);
            Task.sleep(5);
            done.countDown();
        }
    }

    @Test
    void aTimerReSetAfterATimedWaitFiresAtItsNewTime() throws Exception {
        start(1);
        Receiver r = new Receiver();
        spawn(r);
        Thread.sleep(50);
        r.box.putnb("hello");
        assertTrue(r.done.await(10, TimeUnit.SECONDS), "the receiver got its message and slept");
        assertEquals("hello", r.got);
    }

    /** Throws from its body: Kilim logs it; the carrier goes on with the next fiber. */
    static final class Failing extends Task<Object> {
        @Override
        public void execute() throws Pausable {
            Task.sleep(1);
            throw new IllegalStateException("expected by CarriersTest");
        }
    }

    @Test
    void aFailingFiberDoesNotStopItsCarrier() throws Exception {
        start(1);
        for (int i = 0; i < 10; i++) spawn(new Failing());
        ConcurrentLinkedQueue<String> woke = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(1);
        spawn(new Sleeper("after", 20, woke, done));
        assertTrue(done.await(10, TimeUnit.SECONDS), "a fiber after ten failing ones ran");
    }

    /** Holds its carrier thread in Thread.sleep (the trap), then pauses once and ends. */
    static final class Blocker extends Task<Object> {
        final long ms;
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch done = new CountDownLatch(1);
        volatile Thread heldThread;

        Blocker(long ms) {
            this.ms = ms;
        }

        @Override
        public void execute() throws Pausable {
            heldThread = Thread.currentThread();
            started.countDown();
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Task.sleep(1);  // after the hand-off its timer and its resumption go to the carriers' new threads
            done.countDown();
        }
    }

    @Test
    void aFiberThatHoldsEveryCarrierThreadDoesNotStopTheOtherFibers() throws Exception {
        start(2);
        watch = new BlockedCarrierChecker(carriers, 0, 20, 0);
        watch.start();
        Blocker[] blockers = {new Blocker(3_000), new Blocker(3_000)};
        for (Blocker b : blockers) {
            spawn(b);  // from a plain thread: one to each carrier, in turn
            assertTrue(b.started.await(5, TimeUnit.SECONDS), "the blocker started");
        }
        ConcurrentLinkedQueue<String> woke = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(100);
        long start = System.nanoTime();
        for (int i = 0; i < 100; i++) spawn(new Sleeper("f" + i, 1 + i % 5, woke, done));
        assertTrue(done.await(2, TimeUnit.SECONDS), () -> (100 - done.getCount()) + " of 100 fibers ran within 2 s while two blockers held both carriers' threads");
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        for (Blocker b : blockers) assertEquals(1, b.done.getCount(), () -> "the others ran while the blockers still held their threads (" + tookMs + " ms)");
        assertTrue(woke.stream().noneMatch(s -> s.contains("handed off")), () -> "no fiber ran on a handed-off thread: " + woke);
        for (Blocker b : blockers) {
            assertTrue(b.done.await(10, TimeUnit.SECONDS), "the blocker finished once its call returned");
            b.heldThread.join(2_000);
            assertTrue(!b.heldThread.isAlive(), "the handed-off thread ended after its fiber paused");
            assertTrue(b.heldThread != carriers.thread(0) && b.heldThread != carriers.thread(1), "its carrier has a new thread");
        }
    }

    /** A pause of the whole JVM (a garbage collection) stops the watch too: it is not counted toward a hand-off. */
    @Test
    void aStopOfTheWatchItselfIsNotCountedAsAFiberHoldingItsCarrier() throws Exception {
        start(1);
        BlockedCarrierChecker w = new BlockedCarrierChecker(carriers, 0, 20, 0);  // not started: looks are made here, at given times
        assertEquals(10, w.tickMs, "a look every half of the shortest threshold");
        Blocker b = new Blocker(1_000);
        spawn(b);
        assertTrue(b.started.await(5, TimeUnit.SECONDS), "the blocker started");
        w.look(1_000);
        w.look(1_100);  // 100 ms since the last look, over two ticks: the watch was stopped, and so was the fiber
        w.look(1_105);
        w.look(1_110);
        assertEquals(b.heldThread, carriers.thread(0), "held for 10 ms after the stop, not 110: no hand-off");
        for (long t = 1_115; t <= 1_125; t += 5) w.look(t);
        assertTrue(b.heldThread != carriers.thread(0), "held for 20 ms of looks within a tick of each other: handed off");
        assertTrue(b.done.await(10, TimeUnit.SECONDS), "the blocker finished once its call returned");
    }

    @Test
    void withoutHandOffABlockedCarrierStallsItsFibers() throws Exception {
        start(1);
        watch = new BlockedCarrierChecker(carriers, 0, 0, 0);
        watch.start();
        Blocker b = new Blocker(1_000);
        spawn(b);
        assertTrue(b.started.await(5, TimeUnit.SECONDS), "the blocker started");
        CountDownLatch done = new CountDownLatch(1);
        spawn(new Sleeper("after", 1, new ConcurrentLinkedQueue<>(), done));
        assertTrue(!done.await(500, TimeUnit.MILLISECONDS), "with --hand-off-ms 0 the one carrier waits for the blocker (the behaviour hand-offs fix)");
        assertTrue(done.await(10, TimeUnit.SECONDS), "and runs the fiber once it returns");
    }
}

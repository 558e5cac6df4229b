package kiln.db;

import kilim.Scheduler;

/**
 * Tells whether the calling thread is a Kilim carrier: Kilim's scheduler records, per thread, the
 * task it runs ({@code Scheduler.getCurrentTask}, protected, hence this subclass, which is never
 * instantiated). Threads that never ran a Kilim task see null.
 */
abstract class KilimCarrier extends Scheduler {
    private KilimCarrier() {
    }

    /** @return true on a thread that runs Kilim fibers */
    static boolean isCurrentThread() {
        return getCurrentTask() != null;
    }
}

package kiln.server;

/**
 * The time as an event loop last read it, for what needs the time often but not to the microsecond:
 * a connection's deadlines (its idle, header and write timeouts, seconds long, which the reaper
 * checks once a second) and the {@code Date} header (to the second). nginx keeps its time so,
 * read once per turn of its loop ({@code ngx_time_update} after {@code epoll_wait}); kiln's Kilim
 * server reads it as each poll returns, and its blocked-carrier watch every 10 ms while a carrier
 * is awake, so that a long turn (a handler that holds its carrier for just under the hand-off)
 * does not leave it behind. That is two clock reads a poll instead of three a request: at
 * c=19,500, 50 requests a poll.
 *
 * <p>It lags the system's clocks by the time since its last {@link #tick} and never leads them: a
 * deadline kept with it ({@code now + timeout}) and checked against {@link System#nanoTime()}, as the
 * reaper checks it, passes early by at most that lag, about 10 ms (one look of the watch) while the
 * loop runs.
 *
 * <p>Thread-safe: any thread may tick it; a reader sees some recent tick (two ticks racing may
 * leave the older one, microseconds apart).
 */
public final class LoopClock {
    private volatile long nanos = System.nanoTime();
    private volatile long millis = System.currentTimeMillis();

    /** Reads the system's clocks: {@link System#nanoTime()} and {@link System#currentTimeMillis()}. */
    public void tick() {
        nanos = System.nanoTime();
        millis = System.currentTimeMillis();
    }

    /** @return {@link System#nanoTime()} at the last {@link #tick}, ns */
    public long nanoTime() {
        return nanos;
    }

    /** @return {@link System#currentTimeMillis()} at the last {@link #tick}, ms since the epoch */
    public long currentTimeMillis() {
        return millis;
    }
}

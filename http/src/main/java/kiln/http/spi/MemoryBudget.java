package kiln.http.spi;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The request memory of a whole server, counted against one limit ({@code --max-request-memory}):
 * the bytes of request heads that outgrew a connection's first buffer, and of request contents,
 * from the moment they are buffered until the handler that reads them has answered. A connection
 * reserves before it allocates; a refused reservation is answered 503 with {@code Retry-After}
 * instead of an allocation, so that no number of clients, however many bytes they declare or send,
 * can make the server run out of heap. Kestrel bounds the same thing per connection
 * ({@code MaxRequestBufferSize}); one limit for the server bounds the sum. Thread-safe, lock-free.
 */
public final class MemoryBudget {
    /** A budget without a limit: reserving always succeeds (tests, and code that sets none). */
    public static final MemoryBudget UNLIMITED = new MemoryBudget(Long.MAX_VALUE);

    private final long limit;
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();
    private final AtomicLong refusals = new AtomicLong();

    /** @param limit the most bytes reserved at once, > 0 */
    public MemoryBudget(long limit) {
        if (limit < 1) throw new IllegalArgumentException("a memory budget must be at least 1 byte, got " + limit);
        this.limit = limit;
    }

    /**
     * Reserves {@code bytes} if they fit under the limit.
     *
     * @param bytes > 0
     * @return true when reserved (give them back with {@link #release}); false when they do not fit,
     *         counted in {@link #refusals()}
     */
    public boolean reserve(long bytes) {
        while (true) {
            long u = used.get();
            if (u + bytes > limit) {
                refusals.incrementAndGet();
                return false;
            }
            if (used.compareAndSet(u, u + bytes)) {
                peak.accumulateAndGet(u + bytes, Math::max);
                return true;
            }
        }
    }

    /** Gives back {@code bytes} reserved before. */
    public void release(long bytes) {
        used.addAndGet(-bytes);
    }

    /** @return the limit, bytes */
    public long limit() {
        return limit;
    }

    /** @return the bytes reserved now */
    public long used() {
        return used.get();
    }

    /** @return the most bytes reserved at once since the start */
    public long peak() {
        return peak.get();
    }

    /** @return how many reservations did not fit */
    public long refusals() {
        return refusals.get();
    }
}

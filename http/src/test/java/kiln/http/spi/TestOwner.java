package kiln.http.spi;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import kiln.http.BodyOutput;
import kiln.http.BodyStream;
import kiln.http.Limits;
import kiln.http.Response;

/**
 * A {@link Connection.Owner} for tests that drive a connection by hand: a fake clock that moves only
 * when the test says ({@link #advance}), 1 s timeouts, a content limit, a stop switch, and what the
 * connection reported (requests in flight, streams, refusals).
 */
final class TestOwner implements Connection.Owner {
    private final int maxContent;
    /** The request memory the connection reserves from: no limit unless a test gives one. */
    MemoryBudget memory = MemoryBudget.UNLIMITED;
    volatile boolean stopping;
    /** The minimum data rates, bytes/s (0: none), and how far behind them a client may fall, ms. */
    long minRequestRate;
    long minResponseRate;
    long rateGraceMs = 5_000;
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger streamsOpen = new AtomicInteger();
    final List<String> streamsEnded = new CopyOnWriteArrayList<>();
    final List<Integer> refused = new CopyOnWriteArrayList<>();

    /** The buffers the connection borrows: counted, so that a test sees each given back once. */
    final CountingPool buffers = new CountingPool();

    /** A {@link BufferPool} that knows which of its buffers are out, and fails a buffer given back twice or never lent. */
    static final class CountingPool implements BufferPool {
        final java.util.Set<ByteBuffer> out = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        int taken;

        @Override
        public synchronized ByteBuffer take() {
            taken++;
            ByteBuffer b = ByteBuffer.allocate(BUFFER_BYTES);
            out.add(b);
            return b;
        }

        @Override
        public synchronized void give(ByteBuffer b) {
            if (b.capacity() != BUFFER_BYTES) return;  // a buffer that grew: the pool drops it, as the shared one does
            if (!out.remove(b)) throw new AssertionError("a buffer given back twice, or never lent");
        }

        synchronized int outstanding() {
            return out.size();
        }
    }

    /** The fake clock's time, ns; starts near the end of the long range, so deadlines wrap as System.nanoTime's may. */
    private volatile long now = Long.MAX_VALUE - 60_000_000_000L;

    TestOwner() {
        this(Limits.MAX_CONTENT);
    }

    TestOwner(int maxContent) {
        this.maxContent = maxContent;
    }

    /** Moves the fake clock {@code millis} ms on. @return the new time, ns */
    long advance(long millis) {
        now += millis * 1_000_000L;
        return now;
    }

    @Override
    public long nanoTime() {
        return now;
    }

    @Override
    public BufferPool buffers() {
        return buffers;
    }

    @Override
    public long idleTimeoutNanos() {
        return 1_000_000_000L;
    }

    @Override
    public long headerTimeoutNanos() {
        return 1_000_000_000L;
    }

    @Override
    public long minRequestRate() {
        return minRequestRate;
    }

    @Override
    public long minResponseRate() {
        return minResponseRate;
    }

    @Override
    public long rateGraceNanos() {
        return rateGraceMs * 1_000_000L;
    }

    @Override
    public boolean isStopping() {
        return stopping;
    }

    @Override
    public int maxContentBytes() {
        return maxContent;
    }

    @Override
    public MemoryBudget requestMemory() {
        return memory;
    }

    @Override
    public void requestStarted() {
        inFlight.incrementAndGet();
    }

    @Override
    public void requestEnded() {
        inFlight.decrementAndGet();
    }

    /**
     * Counts a streamed response open until its body's {@link BodyStream#ended}, as a server's router
     * does: the connection must end every body it started exactly once.
     */
    Response counted(kiln.http.Request request, Response response) {
        if (response.stream == null || "HEAD".equals(request.method())) return response;
        BodyStream body = response.stream;
        streamsOpen.incrementAndGet();
        return response.withStream(new BodyStream() {
            @Override
            public CompletableFuture<?> poll(BodyOutput out) throws Exception {
                return body.poll(out);
            }

            @Override
            public byte[] heartbeat() {
                return body.heartbeat();
            }

            @Override
            public long heartbeatMillis() {
                return body.heartbeatMillis();
            }

            @Override
            public void ended(String reason) {
                streamsOpen.decrementAndGet();
                streamsEnded.add(reason);
            }
        });
    }

    @Override
    public void refused(InetSocketAddress remote, Response response) {
        refused.add(response.status);
    }
}

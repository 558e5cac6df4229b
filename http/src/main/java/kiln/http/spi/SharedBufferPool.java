package kiln.http.spi;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The process's {@link BufferPool}, {@link #SHARED}: one for every connection that brings none.
 *
 * <p>A fixed array of slots, taken and returned with compare-and-set from any thread (carrier
 * threads, virtual threads): no lock, and no allocation except when the slots a thread looks at
 * are empty, when a new buffer is made. Each thread looks at {@value #PROBES} slots starting at a
 * place derived from its id, so carriers rarely meet. A buffer that grew past
 * {@value BufferPool#BUFFER_BYTES} bytes is not returned (the garbage collector takes it), nor is one that
 * finds its slots full.
 */
final class SharedBufferPool implements BufferPool {
    /** The process's pool: lock-free, for any thread (carriers, virtual threads). */
    static final BufferPool SHARED = new SharedBufferPool();

    private static final int SLOTS = 256;
    private static final int PROBES = 8;
    private final AtomicReferenceArray<ByteBuffer> pool = new AtomicReferenceArray<>(SLOTS);

    private SharedBufferPool() {
    }

    @Override
    public ByteBuffer take() {
        int first = firstSlot();
        for (int i = 0; i < PROBES; i++) {
            int slot = (first + i) & (SLOTS - 1);
            ByteBuffer b = pool.getPlain(slot);
            if (b != null && pool.compareAndSet(slot, b, null)) return b;
        }
        return ByteBuffer.allocate(BUFFER_BYTES);
    }

    @Override
    public void give(ByteBuffer b) {
        if (b.capacity() != BUFFER_BYTES) return;
        b.clear();
        int first = firstSlot();
        for (int i = 0; i < PROBES; i++) {
            int slot = (first + i) & (SLOTS - 1);
            if (pool.getPlain(slot) == null && pool.compareAndSet(slot, null, b)) return;
        }
    }

    private static int firstSlot() {
        return (int) Thread.currentThread().getId() * PROBES;
    }
}

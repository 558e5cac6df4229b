package kiln.http.spi;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Connection buffers lent while a request is read or a response written, so that an idle
 * keep-alive connection holds none (nginx does the same): with 20,000 mostly idle connections, two
 * 1 KiB buffers each would be 40 MB of heap doing nothing.
 *
 * <p>A fixed array of slots, taken and returned with compare-and-set from any thread (carrier
 * threads, virtual threads): no lock, and no allocation except when the slots a thread looks at
 * are empty, when a new buffer is made. Each thread looks at {@value #PROBES} slots starting at a
 * place derived from its id, so carriers rarely meet. A buffer that grew past
 * {@value #BUFFER_BYTES} bytes is not returned (the garbage collector takes it), nor is one that
 * finds its slots full.
 */
final class BufferPool {
    /** Size of a lent buffer: a typical request head or a small response fits. */
    static final int BUFFER_BYTES = 1024;
    private static final int SLOTS = 256;
    private static final int PROBES = 8;
    private static final AtomicReferenceArray<ByteBuffer> POOL = new AtomicReferenceArray<>(SLOTS);

    private BufferPool() {
    }

    /** @return a cleared heap buffer of {@value #BUFFER_BYTES} bytes, pooled or new; give it back with {@link #give} */
    static ByteBuffer take() {
        int first = firstSlot();
        for (int i = 0; i < PROBES; i++) {
            int slot = (first + i) & (SLOTS - 1);
            ByteBuffer b = POOL.getPlain(slot);
            if (b != null && POOL.compareAndSet(slot, b, null)) return b;
        }
        return ByteBuffer.allocate(BUFFER_BYTES);
    }

    /** Returns {@code b}, which the caller no longer touches; one of another size is dropped. */
    static void give(ByteBuffer b) {
        if (b.capacity() != BUFFER_BYTES) return;
        b.clear();
        int first = firstSlot();
        for (int i = 0; i < PROBES; i++) {
            int slot = (first + i) & (SLOTS - 1);
            if (POOL.getPlain(slot) == null && POOL.compareAndSet(slot, null, b)) return;
        }
    }

    private static int firstSlot() {
        return (int) Thread.currentThread().getId() * PROBES;
    }
}

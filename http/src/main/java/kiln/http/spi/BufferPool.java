package kiln.http.spi;

import java.nio.ByteBuffer;

/**
 * Where a {@link Connection} borrows its buffers while a request is read or a response written, so
 * that an idle keep-alive connection holds none (nginx does the same): with 20,000 mostly idle
 * connections, two 1 KiB buffers each would be 40 MB of heap doing nothing. The connection's
 * driver supplies it ({@link Connection.Owner#buffers}); the process's shared pool unless it says otherwise.
 */
public interface BufferPool {
    /** Size of a lent buffer, bytes: a typical request head or a small response fits. */
    int BUFFER_BYTES = 1024;

    /** @return a cleared heap buffer of {@value #BUFFER_BYTES} bytes, pooled or new; give it back with {@link #give} */
    ByteBuffer take();

    /** Returns {@code b}, which the caller no longer touches; one of another size may be dropped. */
    void give(ByteBuffer b);
}

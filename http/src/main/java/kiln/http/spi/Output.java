package kiln.http.spi;

import java.nio.ByteBuffer;

/**
 * A connection's growable output bytes: responses are appended, then written in one go. The
 * buffer is borrowed from its {@link BufferPool} at the first byte and given back by
 * {@link #release} once written, so an idle connection holds none.
 */
final class Output {
    private final BufferPool buffers;
    /** The bytes are {@code buf.array()[0, len)}; null while empty. */
    private ByteBuffer buf;
    private int len;

    Output(BufferPool buffers) {
        this.buffers = buffers;
    }

    int length() {
        return len;
    }

    void put(byte[] b) {
        ensure(b.length);
        System.arraycopy(b, 0, buf.array(), len, b.length);
        len += b.length;
    }

    void putDecimal(int n) {
        if (n == 0) {
            ensure(1);
            buf.array()[len++] = '0';
            return;
        }
        int digits = 0;
        for (int v = n; v > 0; v /= 10) digits++;
        ensure(digits);
        byte[] a = buf.array();
        for (int i = len + digits - 1; i >= len; i--) {
            a[i] = (byte) ('0' + n % 10);
            n /= 10;
        }
        len += digits;
    }

    /** Appends {@code len} bytes of {@code b} from {@code off}. */
    void put(byte[] b, int off, int len) {
        ensure(len);
        System.arraycopy(b, off, buf.array(), this.len, len);
        this.len += len;
    }

    /** Appends {@code n} > 0 in hexadecimal digits, lower case: a chunk's size (RFC 9112 section 7.1). */
    void putHex(int n) {
        int digits = (Integer.SIZE - Integer.numberOfLeadingZeros(n) + 3) / 4;
        ensure(digits);
        byte[] a = buf.array();
        for (int i = len + digits - 1; i >= len; i--) {
            a[i] = (byte) Character.forDigit(n & 0xf, 16);
            n >>>= 4;
        }
        len += digits;
    }

    /** @return the bytes to write (the buffer itself, positioned on them); call {@link #release} once written */
    ByteBuffer toByteBuffer() {
        if (buf == null) return ByteBuffer.allocate(0);
        buf.limit(len).position(0);
        return buf;
    }

    /** Forgets the contents and gives the buffer back: an idle connection holds no output buffer. */
    void release() {
        len = 0;
        if (buf != null) {
            buffers.give(buf);
            buf = null;
        }
    }

    private void ensure(int n) {
        if (buf == null) buf = buffers.take();
        if (len + n > buf.capacity()) {
            ByteBuffer bigger = ByteBuffer.allocate(Math.max(buf.capacity() * 2, len + n));
            System.arraycopy(buf.array(), 0, bigger.array(), 0, len);
            buffers.give(buf);
            buf = bigger;
        }
    }
}

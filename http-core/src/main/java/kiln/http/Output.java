package kiln.http;

import java.nio.ByteBuffer;

/** A connection's growable output bytes: responses are appended, then written in one go. */
final class Output {
    private byte[] buf;
    private int len;

    Output(int initialCapacity) {
        buf = new byte[initialCapacity];
    }

    int length() {
        return len;
    }

    void put(byte[] b) {
        ensure(b.length);
        System.arraycopy(b, 0, buf, len, b.length);
        len += b.length;
    }

    void putDecimal(int n) {
        if (n == 0) {
            ensure(1);
            buf[len++] = '0';
            return;
        }
        int digits = 0;
        for (int v = n; v > 0; v /= 10) digits++;
        ensure(digits);
        for (int i = len + digits - 1; i >= len; i--) {
            buf[i] = (byte) ('0' + n % 10);
            n /= 10;
        }
        len += digits;
    }

    /** @return the bytes to write; call {@link #clear} once written */
    ByteBuffer toByteBuffer() {
        return ByteBuffer.wrap(buf, 0, len);
    }

    /** Forgets the contents; shrinks back after an unusually large response so idle connections stay small. */
    void clear(int idleCapacity) {
        len = 0;
        if (buf.length > 16 * idleCapacity) buf = new byte[idleCapacity];
    }

    private void ensure(int n) {
        if (len + n > buf.length) {
            byte[] bigger = new byte[Math.max(buf.length * 2, len + n)];
            System.arraycopy(buf, 0, bigger, 0, len);
            buf = bigger;
        }
    }
}

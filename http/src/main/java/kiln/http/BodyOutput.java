package kiln.http;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Where a {@link BodyStream} appends one part of a streamed body; the front end frames it (a chunk)
 * and writes it. Grows as needed; made for one {@link BodyStream#poll} call.
 */
public final class BodyOutput {
    private byte[] bytes = new byte[256];
    private int length;

    /** Appends {@code b}. */
    public BodyOutput write(byte[] b) {
        return write(b, 0, b.length);
    }

    /** Appends {@code len} bytes of {@code b} from {@code off}. */
    public BodyOutput write(byte[] b, int off, int len) {
        if (length + len > bytes.length) bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + len));
        System.arraycopy(b, off, bytes, length, len);
        length += len;
        return this;
    }

    /** Appends {@code text} as UTF-8. */
    public BodyOutput write(String text) {
        return write(text.getBytes(StandardCharsets.UTF_8));
    }

    /** @return the number of bytes appended */
    public int length() {
        return length;
    }

    /** @return the bytes appended: the array itself, valid from 0 to {@link #length()} */
    public byte[] array() {
        return bytes;
    }
}

package kiln.db;

import java.io.IOException;
import java.nio.ByteBuffer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Values of one class as UTF-8 JSON through Jackson, the binding under {@link Codec#json} (which
 * adapts it to the {@code Codec} interface). {@link Table#put} asks for the size and then for the
 * bytes of the same value: the value is serialized once, for the size, and the bytes are kept (per
 * thread) for the write that follows.
 */
final class JsonValues<T> {
    /** Stored values outlive class versions: a property the class no longer has is skipped. */
    private static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    /** The last value sized on this thread and its bytes. */
    private static final ThreadLocal<Object[]> LAST = ThreadLocal.withInitial(() -> new Object[2]);

    private final Class<T> type;

    JsonValues(Class<T> type) {
        this.type = type;
    }

    /** @return the length of {@code value}'s JSON in bytes */
    int size(T value) {
        return bytes(value).length;
    }

    /** Puts {@code value}'s JSON at {@code out}'s position. */
    void write(T value, ByteBuffer out) {
        out.put(bytes(value));
        Object[] last = LAST.get();
        last[0] = null;  // do not keep the value alive on this thread
        last[1] = null;
    }

    /** @return the value whose JSON are {@code in}'s remaining bytes */
    T read(ByteBuffer in) {
        byte[] bytes = new byte[in.remaining()];
        in.get(bytes);
        try {
            return JSON.readValue(bytes, type);
        } catch (IOException e) {
            throw new DbException("a stored value is not JSON for " + type.getName() + ": " + e.getMessage(), e);
        }
    }

    private byte[] bytes(T value) {
        Object[] last = LAST.get();
        if (last[0] == value && value != null) return (byte[]) last[1];
        byte[] bytes;
        try {
            bytes = JSON.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot write " + type.getName() + " as JSON: " + e.getOriginalMessage(), e);
        }
        last[0] = value;
        last[1] = bytes;
        return bytes;
    }
}

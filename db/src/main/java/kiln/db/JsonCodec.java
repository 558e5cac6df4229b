package kiln.db;

import java.io.IOException;
import java.nio.ByteBuffer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Values as UTF-8 JSON through Jackson; see {@link Codec#json}. {@link Table#put} asks for the size
 * and then for the bytes of the same value: the value is serialized once, for the size, and the bytes
 * are kept (per thread) for the write that follows.
 */
final class JsonCodec<T> implements Codec<T> {
    /** Stored values outlive class versions: a property the class no longer has is skipped. */
    private static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    /** The last value sized on this thread and its bytes. */
    private static final ThreadLocal<Object[]> LAST = ThreadLocal.withInitial(() -> new Object[2]);

    private final Class<T> type;

    JsonCodec(Class<T> type) {
        this.type = type;
    }

    @Override
    public int size(T value) {
        return bytes(value).length;
    }

    @Override
    public void write(T value, ByteBuffer out) {
        out.put(bytes(value));
        Object[] last = LAST.get();
        last[0] = null;  // do not keep the value alive on this thread
        last[1] = null;
    }

    @Override
    public T read(ByteBuffer in) {
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

    @Override
    public String toString() {
        return "Codec.json(" + type.getName() + ")";
    }
}

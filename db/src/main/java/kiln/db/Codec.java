package kiln.db;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Turns values of type {@code T} into bytes for LMDB and back.
 *
 * <p>Keys are compared by LMDB as unsigned byte strings, so a key codec should encode values in the
 * order you want {@link Table#scan} to visit them. The built-in {@link #INT} and {@link #LONG}
 * codecs do (big-endian, sign bit flipped); {@link #STRING} orders by UTF-8 bytes; {@link #TUPLE}
 * makes composite keys of typed elements that sort element by element. Keys are at
 * most 511 bytes (LMDB's default {@code MDB_MAXKEYSIZE}).
 *
 * <p>For a value class, {@link #json} stores it as JSON through Jackson:
 * <pre>{@code
 * Table<Long, Todo> todos = db.table("todos", Codec.LONG, Codec.json(Todo.class));
 * }</pre>
 *
 * <p>A custom codec for a small fixed-size value class:
 * <pre>{@code
 * Codec<Point> POINT = new Codec<>() {
 *     public int size(Point p) { return 8; }
 *     public void write(Point p, ByteBuffer out) { out.putInt(p.x).putInt(p.y); }
 *     public Point read(ByteBuffer in) { return new Point(in.getInt(), in.getInt()); }
 * };
 * }</pre>
 *
 * @param <T> the Java type
 */
public interface Codec<T> {
    /** @return the exact number of bytes {@link #write} will put for {@code value} */
    int size(T value);

    /**
     * Writes exactly {@link #size} bytes at {@code out}'s position.
     *
     * @param out a big-endian buffer with at least {@code size(value)} bytes remaining
     */
    void write(T value, ByteBuffer out);

    /**
     * Reads a value from all remaining bytes of {@code in}. The buffer points into LMDB's memory
     * map and is only valid during the transaction, so copy out of it (never keep it).
     */
    T read(ByteBuffer in);

    /**
     * For {@link Table#scanPrefix}: whether {@code key}, whose first {@code prefixLength} bytes are
     * the prefix's encoding, belongs to the prefix. Every such key does for a byte prefix (this
     * default). A {@link #TUPLE} key does only when the prefix is a whole number of its elements:
     * FoundationDB's range of a tuple, [prefix, prefix + 0xFF), leaves out a key whose last string
     * or byte string goes on with an escaped zero byte ({@code 0x00 0xFF}). Such keys sort after
     * every key that belongs, so the scan stops at the first.
     *
     * @param key a key, at its position; not changed
     */
    default boolean extendsPrefix(ByteBuffer key, int prefixLength) {
        return true;
    }

    /** 4-byte int, big-endian with the sign bit flipped so that negative keys sort first. */
    Codec<Integer> INT = new Codec<>() {
        @Override public int size(Integer value) { return Integer.BYTES; }
        @Override public void write(Integer value, ByteBuffer out) { out.putInt(value ^ Integer.MIN_VALUE); }
        @Override public Integer read(ByteBuffer in) { return in.getInt() ^ Integer.MIN_VALUE; }
    };

    /** 8-byte long, big-endian with the sign bit flipped so that negative keys sort first. */
    Codec<Long> LONG = new Codec<>() {
        @Override public int size(Long value) { return Long.BYTES; }
        @Override public void write(Long value, ByteBuffer out) { out.putLong(value ^ Long.MIN_VALUE); }
        @Override public Long read(ByteBuffer in) { return in.getLong() ^ Long.MIN_VALUE; }
    };

    /** Raw bytes, as they are (a copy is read out of LMDB's map). Orders as unsigned bytes as a key. */
    Codec<byte[]> BYTES = new Codec<>() {
        @Override public int size(byte[] value) { return value.length; }
        @Override public void write(byte[] value, ByteBuffer out) { out.put(value); }
        @Override public byte[] read(ByteBuffer in) {
            byte[] bytes = new byte[in.remaining()];
            in.get(bytes);
            return bytes;
        }
    };

    /** UTF-8 text, no length prefix (the value's length is the LMDB record's length). */
    Codec<String> STRING = new Codec<>() {
        @Override public int size(String value) { return Keys.utf8Length(value); }
        @Override public void write(String value, ByteBuffer out) { out.put(value.getBytes(StandardCharsets.UTF_8)); }
        @Override public String read(ByteBuffer in) {
            byte[] bytes = new byte[in.remaining()];
            in.get(bytes);
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    /**
     * {@link Tuple}s in FoundationDB's order-preserving tuple encoding: composite keys that sort as
     * their elements do, whose prefixes cover the tuples that extend them
     * ({@code table.scanPrefix(txn, Tuple.of(room), ...)} visits every {@code Tuple.of(room, id)}).
     * Reading bytes that are not a tuple's encoding throws {@link IllegalArgumentException}.
     */
    Codec<Tuple> TUPLE = new Codec<>() {
        @Override public int size(Tuple value) { return value.packedSize(); }
        @Override public void write(Tuple value, ByteBuffer out) { out.put(value.pack()); }
        @Override public Tuple read(ByteBuffer in) { return Tuple.read(in); }
        @Override public boolean extendsPrefix(ByteBuffer key, int prefixLength) {
            return key.remaining() == prefixLength || (key.get(key.position() + prefixLength) & 0xFF) != 0xFF;
        }
    };

    /**
     * Values of {@code type} as UTF-8 JSON, written and read by Jackson: public fields or getters
     * out, public fields, setters or a {@code @JsonCreator} in; a record works too. The size is the
     * JSON's length (LMDB stores values of any length up to the map size). Keep keys out of it: JSON
     * does not sort as its values do.
     *
     * <p>Errors: a value Jackson cannot write throws {@link IllegalArgumentException} in
     * {@link Table#put} (a write query that does so is rolled back alone); a stored value that is
     * not JSON for {@code type} (written by another codec) throws {@link DbException} on read. Classes
     * may change: a stored property the class no longer has is skipped, a new field reads as its default.
     *
     * @param type the value class
     * @return the codec
     */
    static <T> Codec<T> json(Class<T> type) {
        JsonValues<T> json = new JsonValues<>(type);
        return new Codec<>() {
            @Override public int size(T value) { return json.size(value); }
            @Override public void write(T value, ByteBuffer out) { json.write(value, out); }
            @Override public T read(ByteBuffer in) { return json.read(in); }
            @Override public String toString() { return "Codec.json(" + type.getName() + ")"; }
        };
    }
}

package kiln.db;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * An ordered, typed key: a list of elements whose encoding sorts as the tuples do, so that LMDB's
 * byte order is the tuples' order and a tuple's encoding is a prefix of the encoding of every tuple
 * that extends it. The key of a composite index, without hand-made formats:
 *
 * <pre>{@code
 * Table<Tuple, Message> messages = db.table("messages", Codec.TUPLE, Codec.json(Message.class));
 * messages.put(txn, Tuple.of(room, -postedAt, id), message);          // newest first within a room
 * messages.scanPrefix(txn, Tuple.of(room), (key, m) -> ...);          // every message of one room
 * }</pre>
 *
 * <h2>Elements and their order</h2>
 * Elements are, in the order of their kinds: {@code null}; byte strings ({@code byte[]}, compared
 * as unsigned bytes); strings (compared by code point, which is UTF-8's byte order); nested tuples;
 * integers ({@code long}; {@code int}, {@code short} and {@code byte} are stored as {@code long});
 * {@code false}, {@code true}; {@link UUID}s (as 16 unsigned bytes, most significant first);
 * {@link Instant}s. Within a kind, elements compare by value; tuples compare element by element, a
 * shorter tuple first when it is a prefix of the longer.
 *
 * <h2>Encoding</h2>
 * FoundationDB's tuple layer (its {@code design/tuple.md}), so a key kiln writes reads in any
 * FoundationDB binding: null {@code 0x00}; bytes {@code 0x01} and strings {@code 0x02} (UTF-8), each
 * with {@code 0x00} escaped as {@code 0x00 0xFF} and ended by {@code 0x00}; nested tuple {@code 0x05}
 * ... {@code 0x00} (a null inside is {@code 0x00 0xFF}); integers {@code 0x0C}-{@code 0x1C}: zero
 * {@code 0x14}, a positive one {@code 0x14 + n} and its n big-endian bytes, a negative one
 * {@code 0x14 - n} and the one's complement of its magnitude's n bytes; false {@code 0x26}, true
 * {@code 0x27}; UUID {@code 0x30} and 16 bytes. One addition: an {@link Instant} is the user type code
 * {@code 0x40} (FoundationDB leaves 0x40-0x4F to applications), its epoch second as 8 big-endian bytes
 * with the sign bit flipped, then its nanosecond as 4. Floating-point numbers and versionstamps are not
 * supported: keys rarely need them, and the first would bring FoundationDB's NaN ordering with it.
 *
 * <p>Tuples are immutable; a {@code byte[]} element is copied in and out.
 */
public final class Tuple implements Comparable<Tuple> {
    private static final Tuple EMPTY = new Tuple(List.of());

    private static final int NULL = 0x00;
    private static final int BYTES = 0x01;
    private static final int STRING = 0x02;
    private static final int NESTED = 0x05;
    private static final int INT_ZERO = 0x14;
    private static final int FALSE = 0x26;
    private static final int TRUE = 0x27;
    private static final int UUID_CODE = 0x30;
    private static final int INSTANT = 0x40;
    private static final int ESCAPE = 0xFF;

    /** Elements as stored: null, byte[] (owned), String, Tuple, Long, Boolean, UUID, Instant. */
    private final List<Object> elements;

    private Tuple(List<Object> elements) {
        this.elements = elements;
    }

    /**
     * A key of several parts: {@code Tuple.of(room, id)}, {@code Tuple.of("ada", Instant.now())}.
     * Integers of every width come back as {@code long} ({@code Tuple.of(7).getLong(0)}); a
     * {@code byte[]} is copied.
     *
     * @param elements null, {@code byte[]}, {@link String}, {@link Tuple}, {@link Long} (or
     *                 {@link Integer}, {@link Short}, {@link Byte}), {@link Boolean}, {@link UUID},
     *                 {@link Instant}
     * @return the tuple of those elements
     * @throws IllegalArgumentException for an element of another type, or a string with an unpaired
     *                                  surrogate (UTF-8 cannot hold it)
     */
    public static Tuple of(Object... elements) {
        return from(Arrays.asList(elements));
    }

    /**
     * A tuple of a list's elements, for a key whose parts are computed:
     * {@code Tuple.from(List.of(room, id))} equals {@code Tuple.of(room, id)}.
     *
     * @param elements of the types {@link #of} takes
     * @return the tuple of {@code elements}; see {@link #of}
     * @throws IllegalArgumentException as {@link #of}
     */
    public static Tuple from(List<?> elements) {
        if (elements.isEmpty()) return EMPTY;
        List<Object> stored = new ArrayList<>(elements.size());
        for (Object e : elements) stored.add(normalize(e));
        return new Tuple(Collections.unmodifiableList(stored));
    }

    private static Object normalize(Object e) {
        if (e == null || e instanceof String s && checkString(s) || e instanceof Long || e instanceof Boolean || e instanceof UUID
                || e instanceof Instant || e instanceof Tuple) {
            return e;
        }
        if (e instanceof Integer || e instanceof Short || e instanceof Byte) return ((Number) e).longValue();
        if (e instanceof byte[] b) return b.clone();
        throw new IllegalArgumentException("a tuple element must be null, byte[], String, Tuple, long, int, boolean, UUID or Instant;"
            + " got " + e.getClass().getName());
    }

    private static boolean checkString(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("a tuple string must be valid UTF-16: unpaired surrogate at index " + i);
            }
        }
        return true;
    }

    /** @return a new tuple: this one's elements and then {@code element} */
    public Tuple add(Object element) {
        List<Object> more = new ArrayList<>(elements.size() + 1);
        more.addAll(elements);
        more.add(normalize(element));
        return new Tuple(Collections.unmodifiableList(more));
    }

    /** @return the number of elements */
    public int size() {
        return elements.size();
    }

    /** @return element {@code i}: a {@code byte[]} is a copy, an integer a {@link Long} */
    public Object get(int i) {
        Object e = elements.get(i);
        return e instanceof byte[] b ? b.clone() : e;
    }

    /** @throws ClassCastException when element {@code i} is not an integer */
    public long getLong(int i) {
        return (Long) elements.get(i);
    }

    /** @throws ClassCastException when element {@code i} is not a string */
    public String getString(int i) {
        return (String) elements.get(i);
    }

    /** @throws ClassCastException when element {@code i} is not a nested tuple */
    public Tuple getTuple(int i) {
        return (Tuple) elements.get(i);
    }

    /** @return the elements (a {@code byte[]} among them is a copy) */
    public List<Object> items() {
        List<Object> copy = new ArrayList<>(elements.size());
        for (int i = 0; i < elements.size(); i++) copy.add(get(i));
        return copy;
    }

    /** @return the length of {@link #pack()}'s result, computed without encoding */
    public int packedSize() {
        int n = 0;
        for (Object e : elements) n += encodedSize(e, false);
        return n;
    }

    private static int encodedSize(Object e, boolean nested) {
        if (e == null) return nested ? 2 : 1;
        if (e instanceof byte[] b) return 2 + b.length + zeros(b);
        if (e instanceof String s) return 2 + Keys.utf8Length(s) + (int) s.chars().filter(c -> c == 0).count();  // U+0000 is UTF-8's only zero byte
        if (e instanceof Tuple t) {
            int n = 2;
            for (Object inner : t.elements) n += encodedSize(inner, true);
            return n;
        }
        if (e instanceof Long l) {
            long magnitude = l > 0 ? l : -l;
            return 1 + (64 - Long.numberOfLeadingZeros(magnitude) + 7) / 8;
        }
        if (e instanceof Boolean) return 1;
        if (e instanceof UUID) return 17;
        return 13;  // Instant
    }

    private static int zeros(byte[] b) {
        int n = 0;
        for (byte x : b) if (x == 0) n++;
        return n;
    }

    /** @return the encoding (see the class comment); the empty tuple's is empty */
    public byte[] pack() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(16 * elements.size());
        for (Object e : elements) encode(e, out, false);
        return out.toByteArray();
    }

    /**
     * @param bytes an encoding made by {@link #pack}
     * @return the tuple
     * @throws IllegalArgumentException naming the offset and the problem when {@code bytes} is not
     *                                  one: an unknown type code, a missing terminator, an integer
     *                                  beyond a {@code long}, a truncated element
     */
    public static Tuple unpack(byte[] bytes) {
        return read(ByteBuffer.wrap(bytes));
    }

    /** Reads a tuple from all remaining bytes of {@code in}. */
    static Tuple read(ByteBuffer in) {
        List<Object> out = new ArrayList<>();
        while (in.hasRemaining()) out.add(decode(in, false));
        return out.isEmpty() ? EMPTY : new Tuple(Collections.unmodifiableList(out));
    }

    private static void encode(Object e, ByteArrayOutputStream out, boolean nested) {
        if (e == null) {
            out.write(NULL);
            if (nested) out.write(ESCAPE);
        } else if (e instanceof byte[] b) {
            out.write(BYTES);
            escaped(b, out);
        } else if (e instanceof String s) {
            out.write(STRING);
            escaped(s.getBytes(StandardCharsets.UTF_8), out);
        } else if (e instanceof Tuple t) {
            out.write(NESTED);
            for (Object inner : t.elements) encode(inner, out, true);
            out.write(0x00);
        } else if (e instanceof Long n) {
            encodeLong(n, out);
        } else if (e instanceof Boolean b) {
            out.write(b ? TRUE : FALSE);
        } else if (e instanceof UUID u) {
            out.write(UUID_CODE);
            writeLong(u.getMostSignificantBits(), 8, out);
            writeLong(u.getLeastSignificantBits(), 8, out);
        } else {
            Instant i = (Instant) e;
            out.write(INSTANT);
            writeLong(i.getEpochSecond() ^ Long.MIN_VALUE, 8, out);
            writeLong(i.getNano(), 4, out);
        }
    }

    private static void escaped(byte[] b, ByteArrayOutputStream out) {
        for (byte x : b) {
            out.write(x);
            if (x == 0) out.write(ESCAPE);
        }
        out.write(0x00);
    }

    private static void encodeLong(long n, ByteArrayOutputStream out) {
        if (n == 0) {
            out.write(INT_ZERO);
            return;
        }
        long magnitude = n > 0 ? n : -n;  // Long.MIN_VALUE stays 2^63, read as unsigned below
        int length = (64 - Long.numberOfLeadingZeros(magnitude) + 7) / 8;
        if (n > 0) {
            out.write(INT_ZERO + length);
            writeLong(magnitude, length, out);
        } else {
            out.write(INT_ZERO - length);
            writeLong(~magnitude, length, out);
        }
    }

    /** Writes the low {@code length} bytes of {@code v}, most significant first. */
    private static void writeLong(long v, int length, ByteArrayOutputStream out) {
        for (int shift = 8 * (length - 1); shift >= 0; shift -= 8) out.write((int) (v >>> shift) & 0xFF);
    }

    private static Object decode(ByteBuffer in, boolean nested) {
        int at = in.position();
        int code = in.get() & 0xFF;
        if (code == NULL) {
            if (nested) {
                if (!in.hasRemaining() || (in.get() & 0xFF) != ESCAPE) throw bad(at, "a null inside a nested tuple must be 0x00 0xFF");
            }
            return null;
        }
        if (code == BYTES) return unescaped(in, at);
        if (code == STRING) return new String(unescaped(in, at), StandardCharsets.UTF_8);
        if (code == NESTED) {
            List<Object> inner = new ArrayList<>();
            while (true) {
                if (!in.hasRemaining()) throw bad(at, "a nested tuple without its 0x00 terminator");
                int next = in.get(in.position()) & 0xFF;
                boolean escapedNull = next == NULL && in.remaining() > 1 && (in.get(in.position() + 1) & 0xFF) == ESCAPE;
                if (next == NULL && !escapedNull) {
                    in.get();
                    return inner.isEmpty() ? EMPTY : new Tuple(Collections.unmodifiableList(inner));
                }
                inner.add(decode(in, true));
            }
        }
        if (code >= INT_ZERO - 8 && code <= INT_ZERO + 8) return decodeLong(in, code, at);
        if (code == FALSE) return Boolean.FALSE;
        if (code == TRUE) return Boolean.TRUE;
        if (code == UUID_CODE) return new UUID(readLong(in, 8, at), readLong(in, 8, at));
        if (code == INSTANT) {
            long seconds = readLong(in, 8, at) ^ Long.MIN_VALUE;
            long nanos = readLong(in, 4, at);
            if (nanos > 999_999_999) throw bad(at, "an Instant's nanosecond is " + nanos);
            return Instant.ofEpochSecond(seconds, nanos);
        }
        throw bad(at, String.format("unknown type code 0x%02x", code));
    }

    private static byte[] unescaped(ByteBuffer in, int at) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (true) {
            if (!in.hasRemaining()) throw bad(at, "a byte or text string without its 0x00 terminator");
            int b = in.get() & 0xFF;
            if (b != 0x00) {
                out.write(b);
            } else if (in.hasRemaining() && (in.get(in.position()) & 0xFF) == ESCAPE) {
                in.get();
                out.write(0x00);
            } else {
                return out.toByteArray();
            }
        }
    }

    private static long decodeLong(ByteBuffer in, int code, int at) {
        if (code == INT_ZERO) return 0;
        int length = Math.abs(code - INT_ZERO);
        long raw = readLong(in, length, at);
        if (code > INT_ZERO) {
            if (raw < 0) throw bad(at, "an integer beyond a long");
            return raw;
        }
        long mask = length == 8 ? -1L : (1L << (8 * length)) - 1;
        long magnitude = ~raw & mask;
        if (magnitude < 0 && magnitude != Long.MIN_VALUE) throw bad(at, "an integer beyond a long");
        return -magnitude;
    }

    private static long readLong(ByteBuffer in, int length, int at) {
        if (in.remaining() < length) throw bad(at, "a truncated element (" + length + " bytes expected)");
        long v = 0;
        for (int i = 0; i < length; i++) v = v << 8 | (in.get() & 0xFF);
        return v;
    }

    private static IllegalArgumentException bad(int at, String problem) {
        return new IllegalArgumentException("not a tuple encoding: at byte " + at + ", " + problem);
    }

    /** Orders as the encodings do (see the class comment). */
    @Override
    public int compareTo(Tuple other) {
        int n = Math.min(elements.size(), other.elements.size());
        for (int i = 0; i < n; i++) {
            int c = compareElements(elements.get(i), other.elements.get(i));
            if (c != 0) return c;
        }
        return Integer.compare(elements.size(), other.elements.size());
    }

    private static int compareElements(Object a, Object b) {
        int ra = rank(a);
        int rb = rank(b);
        if (ra != rb) return Integer.compare(ra, rb);
        if (a == null) return 0;
        if (a instanceof byte[] x) return Arrays.compareUnsigned(x, (byte[]) b);
        if (a instanceof String x) return compareCodePoints(x, (String) b);
        if (a instanceof Tuple x) return x.compareTo((Tuple) b);
        if (a instanceof Long x) return Long.compare(x, (Long) b);
        if (a instanceof UUID x) {
            UUID y = (UUID) b;
            int c = Long.compareUnsigned(x.getMostSignificantBits(), y.getMostSignificantBits());
            return c != 0 ? c : Long.compareUnsigned(x.getLeastSignificantBits(), y.getLeastSignificantBits());
        }
        if (a instanceof Instant x) return x.compareTo((Instant) b);
        return 0;  // booleans: false and true have ranks of their own
    }

    /** @return the element's kind in encoding order: its type code (every integer 0x14, false and true their own) */
    private static int rank(Object e) {
        if (e == null) return NULL;
        if (e instanceof byte[]) return BYTES;
        if (e instanceof String) return STRING;
        if (e instanceof Tuple) return NESTED;
        if (e instanceof Long) return INT_ZERO;
        if (e instanceof Boolean b) return b ? TRUE : FALSE;
        if (e instanceof UUID) return UUID_CODE;
        return INSTANT;
    }

    private static int compareCodePoints(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) return Integer.compare(ca, cb);
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Tuple t) || t.elements.size() != elements.size()) return false;
        for (int i = 0; i < elements.size(); i++) {
            Object a = elements.get(i);
            Object b = t.elements.get(i);
            if (a instanceof byte[] x ? !(b instanceof byte[] y && Arrays.equals(x, y)) : !Objects.equals(a, b)) return false;
        }
        return true;
    }

    @Override
    public int hashCode() {
        int h = 1;
        for (Object e : elements) h = 31 * h + (e instanceof byte[] b ? Arrays.hashCode(b) : Objects.hashCode(e));
        return h;
    }

    /** @return e.g. {@code ("room", 42, null, b"00ff")} */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("(");
        for (int i = 0; i < elements.size(); i++) {
            if (i > 0) s.append(", ");
            Object e = elements.get(i);
            if (e instanceof String x) {
                s.append('"').append(x.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            } else if (e instanceof byte[] b) {
                s.append("b\"").append(java.util.HexFormat.of().formatHex(b)).append('"');
            } else {
                s.append(e);
            }
        }
        return s.append(elements.size() == 1 ? ",)" : ")").toString();
    }
}

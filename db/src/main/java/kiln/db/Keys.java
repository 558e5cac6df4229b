package kiln.db;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Byte-string arithmetic on keys for the layers' ranges, in the engine's order (unsigned bytes, the
 * shorter first on a tie), null standing for "no bound"; and the UTF-8 length of a string, which the
 * codecs and the tuple encoding size keys by.
 */
public final class Keys {
    private Keys() {
    }

    /** @return the key right after {@code key}: {@code key} followed by a zero byte (no key lies between them) */
    static byte[] next(byte[] key) {
        return Arrays.copyOf(key, key.length + 1);
    }

    /** @return {@code key} followed by the byte {@code b} */
    public static byte[] next(byte[] key, byte b) {
        byte[] out = Arrays.copyOf(key, key.length + 1);
        out[key.length] = b;
        return out;
    }

    /** @return the first byte string after every string that starts with {@code p} (FoundationDB's strinc), or null for none */
    public static byte[] strinc(byte[] p) {
        int n = p.length;
        while (n > 0 && p[n - 1] == (byte) 0xFF) n--;
        if (n == 0) return null;
        byte[] next = Arrays.copyOf(p, n);
        next[n - 1]++;
        return next;
    }

    /** @return the higher of two lower bounds */
    public static byte[] max(byte[] a, byte[] b) {
        if (a == null) return b;
        if (b == null) return a;
        return Arrays.compareUnsigned(a, b) >= 0 ? a : b;
    }

    /** @return the lower of two upper bounds */
    public static byte[] min(byte[] a, byte[] b) {
        if (a == null) return b;
        if (b == null) return a;
        return Arrays.compareUnsigned(a, b) <= 0 ? a : b;
    }

    /**
     * @return {@code key}'s order against {@code other} (negative, 0, positive): the engine's order,
     *         unsigned bytes, then the shorter first (LMDB's default; {@code ByteBuffer.compareTo}
     *         compares signed bytes). {@code key}'s position does not move.
     */
    public static int compare(ByteBuffer key, byte[] other) {
        int p = key.position();
        int n = Math.min(key.remaining(), other.length);
        for (int i = 0; i < n; i++) {
            int c = Byte.toUnsignedInt(key.get(p + i)) - Byte.toUnsignedInt(other[i]);
            if (c != 0) return c;
        }
        return key.remaining() - other.length;
    }

    /** @return the bytes between {@code b}'s position and limit, which do not move */
    public static byte[] toArray(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.get(b.position(), out);
        return out;
    }

    /** Byte length of {@code s} in UTF-8 (unpaired surrogates count as the 1-byte '?' Java writes). */
    static int utf8Length(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) n += 1;
            else if (c < 0x800) n += 2;
            else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) { n += 4; i++; }
            else if (Character.isSurrogate(c)) n += 1;
            else n += 3;
        }
        return n;
    }
}

package kiln.db;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The tokens of {@link Page#continuation()}: version (1 byte), the listing's fingerprint (8), the
 * last key's bytes, and an HMAC-SHA256 of those under the database's secret (16 bytes), in base64url
 * without padding. A token can be neither forged nor moved to another listing: the first fails the
 * MAC, the second the fingerprint.
 *
 * <h2>What a token is bound to</h2>
 * A listing is a table or an index, a prefix (or none) and a direction: the fingerprint covers
 * those, and not the range's bounds. A listing whose bounds are computed per request ("upcoming
 * events", from now; a filter's lower value) resumes after the last key shown, within the bounds
 * of the request that brings the token: rows the moved bound now leaves out are not listed, and
 * nothing outside the bounds ever is. The bounds are not a secret the token protects (a client may
 * ask for any range), so leaving them out loses nothing; the prefix, the direction and the listing
 * are what tell one list from another, and a token brought to another is refused.
 */
final class Continuations {
    /** 2 since the fingerprint left the bounds out (2026-11-28); a token of version 1 is refused. */
    private static final byte VERSION = 2;
    private static final int FINGERPRINT = 8;
    private static final int MAC = 16;

    private final SecretKeySpec secret;
    /** MACs made with the secret, reused: making one costs more than using it (a pool, not a thread local: virtual threads). */
    private final java.util.concurrent.ConcurrentLinkedQueue<Mac> macs = new java.util.concurrent.ConcurrentLinkedQueue<>();

    /** @param secret 32 random bytes kept in the database ({@code kiln.meta}) */
    Continuations(byte[] secret) {
        this.secret = new SecretKeySpec(secret, "HmacSHA256");
        mac(new byte[1], 1);  // the JCA's first look-up of HmacSHA256 takes 100s of ms: here, at open, not in a first request
    }

    /**
     * @return the fingerprint of a listing: 64-bit FNV-1a of the table's or index's name, the
     *         encoded prefix (or none) and the direction. It needs no secrecy or strength: the MAC
     *         covers it, and it only tells a token brought to another listing (a collision would let
     *         a client start one listing after a key it was shown in another, no more)
     */
    static byte[] fingerprint(String name, byte[] prefix, boolean reverse) {
        long h = 0xcbf29ce484222325L;
        h = fnv(h, name.getBytes(StandardCharsets.UTF_8));
        h = fnv(h, prefix == null ? new byte[] {0} : new byte[] {1, (byte) (prefix.length >>> 8), (byte) prefix.length});
        if (prefix != null) h = fnv(h, prefix);
        h = fnv(h, new byte[] {(byte) (reverse ? 1 : 0)});
        return ByteBuffer.allocate(FINGERPRINT).putLong(h).array();
    }

    private static long fnv(long h, byte[] bytes) {
        for (byte b : bytes) {
            h ^= b & 0xFF;
            h *= 0x100000001b3L;
        }
        return h;
    }

    String token(byte[] fingerprint, byte[] lastKey) {
        ByteBuffer body = ByteBuffer.allocate(1 + FINGERPRINT + lastKey.length + MAC);
        body.put(VERSION).put(fingerprint).put(lastKey);
        body.put(mac(body.array(), body.position()));
        return Base64.getUrlEncoder().withoutPadding().encodeToString(body.array());
    }

    /**
     * @return the last key the token's page ended with
     * @throws DbException.BadContinuation naming why the token is refused
     */
    byte[] lastKey(String token, byte[] fingerprint) {
        byte[] body;
        try {
            body = Base64.getUrlDecoder().decode(token);
        } catch (IllegalArgumentException e) {
            throw new DbException.BadContinuation("bad continuation: not a token of this database (not URL-safe base64)");
        }
        if (body.length < 1 + FINGERPRINT + 1 + MAC || body[0] != VERSION) {
            throw new DbException.BadContinuation("bad continuation: not a token of this database (wrong length or version)");
        }
        int signed = body.length - MAC;
        if (!MessageDigest.isEqual(mac(body, signed), Arrays.copyOfRange(body, signed, body.length))) {
            throw new DbException.BadContinuation("bad continuation: its signature does not match (altered, or made by another database)");
        }
        if (!Arrays.equals(body, 1, 1 + FINGERPRINT, fingerprint, 0, FINGERPRINT)) {
            throw new DbException.BadContinuation("bad continuation: it was made for another listing (table, index, prefix or direction); pass it back to the listing that gave it");
        }
        return Arrays.copyOfRange(body, 1 + FINGERPRINT, signed);
    }

    private byte[] mac(byte[] bytes, int length) {
        Mac m = macs.poll();
        try {
            if (m == null) {
                m = Mac.getInstance("HmacSHA256");
                m.init(secret);
            }
            m.update(bytes, 0, length);
            return Arrays.copyOf(m.doFinal(), MAC);  // doFinal() resets it for its next use
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        } finally {
            if (m != null) macs.offer(m);
        }
    }
}

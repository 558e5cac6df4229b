package kiln.db;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Objects;

/**
 * Writes that are safe to retry. A client sends a key of its own making with a write (the HTTP
 * header {@code Idempotency-Key}); the write's result is stored under that key <em>in the write's
 * own transaction</em>, so a retry of the same request gets the stored result and writes nothing
 * again. It is the answer to a write whose outcome the client never learnt: its connection broke
 * before the answer came, or, over PostgreSQL, the database's connection broke during the commit
 * ({@link DbException.Unavailable}, "outcome unknown"). The pattern is Stripe's
 * ({@code https://docs.stripe.com/api/idempotent_requests}) and the IETF's
 * draft-ietf-httpapi-idempotency-key-header. Obtain one with {@link Db#idempotencyKeys}:
 *
 * <pre>{@code
 * IdempotencyKeys<Long> transfers = db.idempotencyKeys("transfers.keys", Codec.LONG, Duration.ofHours(24));
 * long id = db.write(transfers.once(account, key, from + " " + to + " " + cents, txn -> {
 *     long next = ids.next(txn);
 *     ledger.put(txn, next, new Transfer(from, to, cents));
 *     return next;
 * })).join();                 // again with the same key: the same id, and no second transfer
 * }</pre>
 *
 * <ul>
 *   <li><b>Stored with the write.</b> The key's row is put in the transaction of the body's writes:
 *       both commit or neither does, so a retry finds the result exactly when the first write was
 *       applied, and runs the body exactly when it was not.</li>
 *   <li><b>Failures are not stored.</b> A body that throws stores no key, and its write query rolls
 *       back alone (see {@link Db#write}): a retry runs it again. (Stripe stores a 500 too; here a
 *       failed write left nothing behind, so running it again is the truthful answer.)</li>
 *   <li><b>Fingerprint.</b> What makes the request this request (its method, target and content):
 *       a key that comes back with another fingerprint fails with
 *       {@link DbException.IdempotencyKeyReused} (HTTP 422, as the draft's "Error Scenarios" say).
 *       Only its SHA-256 is stored, 32 bytes whatever its length.</li>
 *   <li><b>Scope.</b> Whose keys they are, e.g. a user's id: the same key of two scopes never meets,
 *       so one client cannot replay another's answer (Stripe's keys are per account).</li>
 *   <li><b>Concurrent retries.</b> Write queries run one at a time (one writer thread; over
 *       PostgreSQL the servers take turns), so a retry that arrives while the first is still queued
 *       waits for it and gets its result: the draft's 409 for a request in progress never arises.</li>
 *   <li><b>Expiry.</b> A key is kept for the {@code keep} given to {@link Db#idempotencyKeys} after
 *       its first use (Stripe keeps keys at least 24 hours); after that the key is new again and runs
 *       its body. Each key is a row of an {@link Db#expiringTable expiring table}: the scope and the
 *       key, the fingerprint's 32 bytes, the result's encoding, and the table's 8-byte expiry and
 *       schedule entry; the sweeper deletes it once expired.</li>
 * </ul>
 *
 * <p>Thread-safe; all state lives in the transaction.
 *
 * @param <R> the write's result type, stored with its codec ({@code null} results too)
 */
public final class IdempotencyKeys<R> {
    /** The longest key, characters: Stripe's limit. */
    public static final int MAX_KEY_LENGTH = 255;
    /** The longest scope, bytes of UTF-8: with the longest key, the row's key stays within a table's 511 bytes. */
    public static final int MAX_SCOPE_BYTES = 100;
    /** Bytes of a stored fingerprint: a SHA-256 digest. */
    private static final int FINGERPRINT_BYTES = 32;

    private final Table<Tuple, Stored<R>> keys;
    private final Duration keep;

    private IdempotencyKeys(Table<Tuple, Stored<R>> keys, Duration keep) {
        this.keys = keys;
        this.keep = keep;
    }

    /** {@link Db#idempotencyKeys}: keys in the expiring table {@code name}, rows keyed {@code Tuple.of(scope, key)}. */
    static <R> IdempotencyKeys<R> open(Catalog catalog, String name, Codec<R> results, Duration keep) {
        Objects.requireNonNull(results, "results");
        if (keep == null || keep.isNegative() || keep.isZero()) throw new IllegalArgumentException("keep must be positive, got " + keep);
        return new IdempotencyKeys<>(catalog.table(name, Codec.TUPLE, new StoredCodec<>(results), true, keep), keep);
    }

    /**
     * Inside a write query: the result stored under {@code key} in {@code scope}, or else
     * {@code body}'s, run in {@code txn} and stored under the key, in this transaction, for
     * {@link #keep()}.
     *
     * <p>{@code body} runs in the caller's transaction: when it throws, the key is not stored, but
     * what it wrote before throwing stays unless the exception leaves the write query too (then the
     * query rolls back alone). So let it leave.
     *
     * @param scope       whose key it is, e.g. a user's id; {@code ""} for one space shared by every
     *                    client; at most {@value #MAX_SCOPE_BYTES} bytes of UTF-8
     * @param key         the client's key, as sent: 1..{@value #MAX_KEY_LENGTH} characters of
     *                    printable ASCII (0x20..0x7E, the characters of a Structured Field String,
     *                    RFC 8941 section 3.3.3, which the draft makes the header's value); a random
     *                    UUID is a good one
     * @param fingerprint what makes the request this one, e.g. its method, target and content (any
     *                    length; only its SHA-256 is kept)
     * @param body        the write, run at most once per key within {@link #keep()}; its result
     *                    must encode with the results codec into at most {@link Table#MAX_VALUE_BYTES}
     *                    less 33 bytes
     * @return the stored result on a retry (decoded anew: equal, not the same object), else {@code body}'s
     * @throws DbException.IdempotencyKeyReused when the key is stored with another fingerprint (nothing runs)
     * @throws DbException.BadIdempotencyKey    when {@code key} is empty, too long or not printable ASCII
     * @throws IllegalArgumentException         when {@code scope} is longer than {@value #MAX_SCOPE_BYTES} bytes
     * @throws IllegalStateException            in a read transaction
     * @throws Exception                        what {@code body} throws (the key is not stored)
     */
    public R once(Txn txn, String scope, String key, String fingerprint, Query<R> body) throws Exception {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(body, "body");
        check(key);
        if (Keys.utf8Length(scope) > MAX_SCOPE_BYTES) {
            throw new IllegalArgumentException("an idempotency key's scope is at most " + MAX_SCOPE_BYTES + " bytes of UTF-8, got "
                + Keys.utf8Length(scope) + " for table '" + keys.name() + "'");
        }
        txn.checkWritable("IdempotencyKeys.once");
        Tuple row = Tuple.of(scope, key);
        byte[] digest = sha256(fingerprint);
        Stored<R> stored = keys.get(txn, row);   // an expired key reads as none: it runs again
        if (stored != null) {
            if (!MessageDigest.isEqual(stored.fingerprint(), digest)) {
                throw new DbException.IdempotencyKeyReused(key, "idempotency key '" + key + "' was used for another request within the last "
                    + human(keep) + ": a retry must repeat its request exactly, and a new request needs a new key");
            }
            return stored.result();
        }
        R result = body.run(txn);
        keys.put(txn, row, new Stored<>(digest, result));
        return result;
    }

    /**
     * {@link #once(Txn, String, String, String, Query)} as a write query of its own, for when the
     * scope is known before the write: {@code db.write(keys.once(scope, key, fingerprint, txn -> ...))}.
     */
    public Query<R> once(String scope, String key, String fingerprint, Query<R> body) {
        return txn -> once(txn, scope, key, fingerprint, body);
    }

    /** @return how long a key is kept after its first use */
    public Duration keep() {
        return keep;
    }

    /** @return the name of the expiring table that holds the keys */
    public String name() {
        return keys.name();
    }

    /** @throws DbException.BadIdempotencyKey when {@code key} is not 1..255 characters of printable ASCII */
    private static void check(String key) {
        if (key == null || key.isEmpty()) throw new DbException.BadIdempotencyKey("an idempotency key must not be empty");
        if (key.length() > MAX_KEY_LENGTH) {
            throw new DbException.BadIdempotencyKey("an idempotency key is at most " + MAX_KEY_LENGTH + " characters, got " + key.length());
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                throw new DbException.BadIdempotencyKey("an idempotency key is printable ASCII (0x20..0x7E); character " + i
                    + " is U+" + String.format("%04X", (int) c));
            }
        }
    }

    private static byte[] sha256(String fingerprint) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(fingerprint.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    /** @return {@code d} as people write it: 24h, 30m, 1.5s */
    private static String human(Duration d) {
        return d.toString().substring(2).toLowerCase(java.util.Locale.ROOT);
    }

    @Override
    public String toString() {
        return "IdempotencyKeys(" + keys.name() + ", keep " + human(keep) + ")";
    }

    /** A key's row: the request's fingerprint digest and the write's result. */
    private record Stored<R>(byte[] fingerprint, R result) {
    }

    /** A {@link Stored}: the fingerprint's 32 bytes, 1 if a result follows (0 for null), the result's encoding. */
    private static final class StoredCodec<R> implements Codec<Stored<R>> {
        private final Codec<R> results;

        StoredCodec(Codec<R> results) {
            this.results = results;
        }

        @Override
        public int size(Stored<R> s) {
            return FINGERPRINT_BYTES + 1 + (s.result() == null ? 0 : results.size(s.result()));
        }

        @Override
        public void write(Stored<R> s, ByteBuffer out) {
            out.put(s.fingerprint());
            out.put((byte) (s.result() == null ? 0 : 1));
            if (s.result() != null) results.write(s.result(), out);
        }

        @Override
        public Stored<R> read(ByteBuffer in) {
            byte[] fingerprint = new byte[FINGERPRINT_BYTES];
            in.get(fingerprint);
            return new Stored<>(fingerprint, in.get() == 0 ? null : results.read(in));
        }

        @Override
        public String toString() {
            return "IdempotencyKeys.StoredCodec(" + results + ")";
        }
    }
}

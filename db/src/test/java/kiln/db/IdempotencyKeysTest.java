package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Writes safe to retry: a key's first write runs and stores its result in the same transaction; a
 * retry gets that result and runs nothing; another request under the key fails; a failed write
 * stores no key; keys are scoped, checked, and forgotten after their time.
 */
class IdempotencyKeysTest {
    @TempDir Path dir;
    Db db;
    /** How many times a body ran: a counter row the bodies add to. */
    Table<String, Long> runs;
    IdempotencyKeys<Long> keys;

    @BeforeEach
    void open() {
        db = Engines.open(dir);
        runs = db.table("runs", Codec.STRING, Codec.LONG);
        keys = db.idempotencyKeys("runs.keys", Codec.LONG, Duration.ofHours(24));
    }

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    /** @return the body's result: the run count after it ran, or the stored one of an earlier run */
    private long post(String scope, String key, String fingerprint) {
        return db.write(keys.once(scope, key, fingerprint, txn -> runs.add(txn, "runs", 1))).join();
    }

    private long ran() {
        return db.read(txn -> runs.get(txn, "runs", 0L)).join();
    }

    private static <T extends Throwable> T fails(Class<T> type, org.junit.jupiter.api.function.Executable write) {
        CompletionException e = assertThrows(CompletionException.class, write);
        assertTrue(type.isInstance(e.getCause()), "expected " + type.getSimpleName() + ", got " + e.getCause());
        return type.cast(e.getCause());
    }

    @Test
    void aRetryGetsTheStoredResultAndRunsNothing() {
        assertEquals(1, post("ada", "k1", "POST /transfers 5"));
        assertEquals(1, post("ada", "k1", "POST /transfers 5"), "the retry's answer is the first's");
        assertEquals(1, ran(), "the body ran once");
        assertEquals(2, post("ada", "k2", "POST /transfers 5"), "another key is another write");
        db.close();
        open();
        assertEquals(1, post("ada", "k1", "POST /transfers 5"), "the key was committed with its write");
        assertEquals(2, ran());
    }

    @Test
    void aNullResultIsStoredToo() {
        Query<Long> nothing = txn -> {
            runs.add(txn, "runs", 1);
            return null;
        };
        assertNull(db.write(keys.once("ada", "k", "f", nothing)).join());
        assertNull(db.write(keys.once("ada", "k", "f", nothing)).join());
        assertEquals(1, ran());
    }

    @Test
    void theSameKeyForAnotherRequestIsRefused() {
        assertEquals(1, post("ada", "k", "POST /transfers 5"));
        DbException.IdempotencyKeyReused e = fails(DbException.IdempotencyKeyReused.class, () -> post("ada", "k", "POST /transfers 500"));
        assertEquals("k", e.key);
        assertTrue(e.getMessage().contains("'k' was used for another request within the last 24h"), e.getMessage());
        assertEquals(1, ran(), "nothing ran");
        assertEquals(1, post("ada", "k", "POST /transfers 5"), "the first request's retry still gets its answer");
    }

    @Test
    void scopesKeepKeysApart() {
        assertEquals(1, post("ada", "k", "f"));
        assertEquals(2, post("bob", "k", "another request"), "bob's k is not ada's");
        assertEquals(3, post("", "k", "f"));
        assertEquals(2, post("bob", "k", "another request"));
        assertEquals(3, ran());
    }

    @Test
    void aBodyThatFailsStoresNoKey() {
        Table<String, String> rows = db.table("rows", Codec.STRING, Codec.STRING);
        Query<Long> half = txn -> {
            rows.put(txn, "half", "written");
            throw new IllegalStateException("the body failed");
        };
        fails(IllegalStateException.class, () -> db.write(keys.once("ada", "k", "f", half)).join());
        assertNull(db.read(txn -> rows.get(txn, "half")).join(), "the write query rolled back");
        // a query that catches its body's failure commits, and the key is still not stored
        assertEquals(-1L, db.write(txn -> {
            try {
                return keys.once(txn, "ada", "k", "f", t -> {
                    throw new IllegalStateException("the body failed");
                });
            } catch (IllegalStateException caught) {
                return -1L;
            }
        }).join());
        assertEquals(1, post("ada", "k", "f"), "the retry runs the body");
        assertEquals(1, post("ada", "k", "f"));
        assertEquals(1, ran());
    }

    /** Retries queued together, with a failing first try before them, land in one batch: the body runs once, after the failure rolled back. */
    @Test
    void retriesInOneBatchRunTheBodyOnce() throws Exception {
        Table<String, String> rows = db.table("rows", Codec.STRING, Codec.STRING);
        WriterGate gate = new WriterGate(db);
        List<QueryFuture<Long>> retries = new ArrayList<>();
        QueryFuture<Long> failed;
        try {
            failed = db.write(keys.once("ada", "k", "f", txn -> {
                rows.put(txn, "half", "written");
                throw new IllegalStateException("the body failed");
            }));
            for (int i = 0; i < 10; i++) retries.add(db.write(keys.once("ada", "k", "f", txn -> runs.add(txn, "runs", 1))));
        } finally {
            gate.open();
        }
        fails(IllegalStateException.class, failed::join);
        for (QueryFuture<Long> r : retries) assertEquals(1, r.join());
        assertEquals(1, ran());
        assertNull(db.read(txn -> rows.get(txn, "half")).join());
    }

    @Test
    void aKeyIsForgottenAfterKeep() throws Exception {
        IdempotencyKeys<Long> brief = db.idempotencyKeys("runs.brief-keys", Codec.LONG, Duration.ofMillis(200));
        Query<Long> body = txn -> runs.add(txn, "runs", 1);
        assertEquals(1, db.write(brief.once("ada", "k", "f", body)).join());
        assertEquals(1, db.write(brief.once("ada", "k", "f", body)).join(), "kept for 200 ms");
        Thread.sleep(300);
        assertEquals(2, db.write(brief.once("ada", "k", "another request", body)).join(), "forgotten: the key is new again");
        assertEquals(2, db.write(brief.once("ada", "k", "another request", body)).join());
        assertEquals(2, ran());
    }

    @Test
    void keysAreCheckedAndScopesBounded() {
        for (String bad : new String[] {"", "k".repeat(IdempotencyKeys.MAX_KEY_LENGTH + 1), "line\nbreak", "caf\u00e9"}) {
            fails(DbException.BadIdempotencyKey.class, () -> post("ada", bad, "f"));
        }
        String longest = "k".repeat(IdempotencyKeys.MAX_KEY_LENGTH);
        String widest = "\u0000".repeat(IdempotencyKeys.MAX_SCOPE_BYTES);   // escaped to two bytes each in the row's key
        assertEquals(1, post(widest, longest, "f"), "the longest key in the widest scope fits a row's key");
        assertEquals(1, post(widest, longest, "f"));
        assertEquals(2, post("ada", "\"quoted\" and spaced ~!", "f"));
        fails(IllegalArgumentException.class, () -> post("s".repeat(IdempotencyKeys.MAX_SCOPE_BYTES + 1), "k", "f"));
        IllegalStateException read = fails(IllegalStateException.class,
            () -> db.read(txn -> keys.once(txn, "ada", "k", "f", t -> 0L)).join());
        assertTrue(read.getMessage().contains("write transaction"), read.getMessage());
        assertThrows(IllegalArgumentException.class, () -> db.idempotencyKeys("runs.never", Codec.LONG, Duration.ZERO));
        assertEquals(2, ran());
    }
}

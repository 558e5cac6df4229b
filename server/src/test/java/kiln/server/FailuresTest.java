package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionException;

import kiln.db.DbException;
import kiln.http.Response;
import org.junit.jupiter.api.Test;

/** The failure policy for the database's typed errors: each its status, with a message for the client and the details for the log. */
class FailuresTest {
    private static void answers(int status, Throwable failure, String told, String... notTold) {
        Response r = Failures.toResponse(new CompletionException(failure), "GET /t");
        assertEquals(status, r.status, String.valueOf(failure));
        String body = new String(r.body, StandardCharsets.UTF_8);
        assertTrue(body.contains(told), "the client is told " + told + ": " + body);
        for (String detail : notTold) assertFalse(body.contains(detail), "the log's detail " + detail + " reaches the client: " + body);
    }

    @Test
    void everyDatabaseErrorAClientCanActOnHasItsStatusAndAMessageWithoutInternals() {
        answers(409, new DbException.UniqueViolation("users.by-email", "ada@example.org",
                "'ada@example.org' is taken in unique index 'users.by-email' of 'users' (by row 1; the write for row 2 was refused)"),
            "'ada@example.org' is already taken", "users.by-email", "row 1", "'users'");
        answers(503, new DbException.IndexNotReady("index 'users.by-email' of 'users' is being built", null),
            "an index this request needs is not ready", "users.by-email");
        answers(400, new DbException.BadContinuation("bad continuation: altered"), "bad continuation: altered");
        answers(507, new DbException.DatabaseFull("database full: MDB_MAP_FULL in /var/lib/kiln/data"), "the database is full", "/var/lib");
        answers(422, new DbException.IdempotencyKeyReused("k1", "idempotency key 'k1' was used for another request within the last 24h"),
            "idempotency key 'k1' was used for another request");
        answers(400, new DbException.BadIdempotencyKey("an idempotency key must not be empty"), "must not be empty");
        answers(413, new DbException.ValueTooLarge("value for table 'blobs' is 16777217 bytes; values are at most 16777216 bytes", 16_777_217, 16_777_216),
            "the value is 16777217 bytes; at most 16777216", "blobs");
        answers(503, new DbException.Unavailable("PostgreSQL at db.internal:5432/kiln is unreachable: Connection refused", null),
            "the database is unavailable", "db.internal");
        answers(503, new DbException.ReadersFull("all 1016 read slots stayed in use for 5000 ms (--db-max-readers)", null),
            "the database is busy", "read slots");
        assertEquals("1", Failures.toResponse(new DbException.IndexNotReady("being built", null), null).header("Retry-After"));
    }

    /** A query the database did not answer within its deadline: 503 with Retry-After, and the message that says what became of it. */
    @Test
    void aDeadlineExceededIsUnavailableWithRetryAfterAndItsOutcome() {
        String unknown = "the database did not commit this write within its deadline of 5000 ms (PostgreSQL at jdbc:postgresql://db/kiln):"
            + " it had begun and may still commit, so whether it is applied is unknown";
        answers(503, new DbException.DeadlineExceeded(unknown, java.time.Duration.ofSeconds(5), true),
            "the write had begun and may still be applied (its outcome is unknown)", "jdbc:postgresql");
        String notApplied = "the database did not begin this write within its deadline of 5000 ms (PostgreSQL at jdbc:postgresql://db/kiln,"
            + " its writer busy with earlier writes): it was withdrawn and never runs, so it is not applied; retry shortly";
        Response r = Failures.toResponse(new DbException.DeadlineExceeded(notApplied, java.time.Duration.ofSeconds(5), false), null);
        assertEquals(503, r.status);
        assertEquals("1", r.header("Retry-After"));
        assertTrue(new String(r.body, StandardCharsets.UTF_8).contains("nothing of it was applied"));
    }
}

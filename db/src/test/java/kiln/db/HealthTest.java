package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Db#health}: ok while open and the writer moves; a problem when closed or when the writer is stuck. */
class HealthTest {
    @TempDir Path dir;

    @Test
    void anOpenDatabaseIsHealthyAndAClosedOneIsNot() {
        Db db = Db.open(dir);
        DbHealth h = db.health();
        assertTrue(h.isOk(), h::toString);
        assertNull(h.problem());
        db.close();
        DbHealth closed = db.health();
        assertFalse(closed.isOk());
        assertEquals("the database is closed", closed.problem());
    }

    @Test
    void aWriterStuckInOneBatchLongerThanTheLimitIsReportedAndRecovers() throws Exception {
        try (Db db = Db.builder(dir).writerStallLimit(Duration.ofMillis(200)).open()) {
            Table<Integer, Integer> t = db.table("t", Codec.INT, Codec.INT);
            WriterGate gate = new WriterGate(db);  // the writer is now inside one write query
            try {
                db.write(txn -> { t.put(txn, 1, 1); return null; });
                assertTrue(db.health().isOk(), "a batch younger than the limit is not a stall");
                Thread.sleep(400);
                DbHealth stuck = db.health();
                assertFalse(stuck.isOk());
                assertTrue(stuck.problem().startsWith("the database's writer has been in one batch for "), stuck.problem());
                assertTrue(stuck.problem().endsWith("1 writes waiting"), stuck.problem());
            } finally {
                gate.open();
            }
            db.write(txn -> null).join();
            assertTrue(db.health().isOk(), () -> "after the batch ends: " + db.health());
        }
    }
}

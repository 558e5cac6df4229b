package kiln.db.postgresql;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.DbHealth;
import kiln.db.QueryFuture;
import kiln.db.Table;

/**
 * A PostgreSQL server that is paused (every process of it stopped with SIGSTOP, as a paused VM or a
 * stuck machine is): it accepts nothing and answers nothing, and no error comes. The database's
 * health, and every read and write waiting on the server, are answered within their deadline all the
 * same, each saying what became of it, and all work again once the server resumes. A server of its
 * own, so the others' tests never pause.
 */
class FrozenServerTest {
    @TempDir
    Path dir;
    private Path data;
    private boolean frozen;

    @BeforeEach
    void startServer() throws IOException {
        // under /tmp: as root the server runs as the postgres user, which may not enter the checkout
        data = Files.createTempDirectory("kiln-frozen-postgres-", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")))
            .resolve("data");
        TestPostgres.script("init", data.toString(), Integer.toString(TestPostgres.freePort()));
    }

    @AfterEach
    void stopServer() throws Exception {
        if (frozen) signal("CONT");
        TestPostgres.script("stop", data.toString(), "immediate");
        TestPostgres.removeServer(data.getParent());
    }

    /** Sends {@code SIGname} to the server's postmaster and every process under it. */
    private void signal(String name) throws Exception {
        long postmaster = Long.parseLong(Files.readAllLines(data.resolve("postmaster.pid")).get(0).trim());
        List<String> command = new ArrayList<>(List.of("kill", "-" + name, Long.toString(postmaster)));
        ProcessHandle.of(postmaster).orElseThrow().descendants().forEach(p -> command.add(Long.toString(p.pid())));
        Process kill = new ProcessBuilder(command).inheritIO().start();
        assertTrue(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0, "kill -" + name);
        frozen = name.equals("STOP");
    }

    @Test
    void healthAnswersWithinItsDeadlineWhileTheServerIsPausedAndRecovers() throws Exception {
        String url = TestPostgres.script("url", data.toString());
        try (Db db = Db.builder(PostgresEngine.open(url)).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 1, "before"); return null; }).join();
            Duration within = Duration.ofSeconds(2);
            assertTrue(db.health(within).get(10, TimeUnit.SECONDS).isOk());

            signal("STOP");
            long start = System.nanoTime();
            DbHealth paused = db.health(within).get(20, TimeUnit.SECONDS);
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertFalse(paused.isOk());
            assertTrue(paused.problem().startsWith("the database did not answer a read within 2000 ms"), paused.problem());
            assertTrue(tookMs < 6_000, "answered in " + tookMs + " ms, for a deadline of 2000 ms");

            signal("CONT");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            DbHealth after;
            do {
                after = db.health(within).get(20, TimeUnit.SECONDS);
            } while (!after.isOk() && System.nanoTime() < deadline);
            assertTrue(after.isOk(), "healthy again once the server resumed: " + after);
            assertEquals("before", db.read(txn -> t.get(txn, 1)).get(30, TimeUnit.SECONDS));
        }
    }

    /** How late past its deadline a query may be answered on a busy 2-core machine, ms (the design says 100 ms). */
    private static final long LATE_MS = 3_000;

    /**
     * @return the failure of {@code f}, which must come within {@code deadline} and {@link #LATE_MS} of
     *         {@code asked}; prints how long it took
     */
    private static DbException.Unavailable failsInTime(String what, Future<?> f, long asked, Duration deadline) {
        long left = deadline.toMillis() + LATE_MS - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - asked);
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(Math.max(0, left), MILLISECONDS),
            what + " answered within the deadline of " + deadline.toMillis() + " ms and " + LATE_MS + " ms more (not after PgJDBC's 30 s socket timeout)");
        System.out.println("FrozenServerTest: " + what + " answered " + e.getCause().getClass().getSimpleName() + " after "
            + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - asked) + " ms (deadline " + deadline.toMillis() + " ms)");
        return assertInstanceOf(DbException.Unavailable.class, e.getCause());
    }

    /** @return the result of the first of {@code query}'s futures to succeed, trying again while they fail Unavailable, for up to 60 s */
    private static <R> R once(java.util.function.Supplier<QueryFuture<R>> query) throws Exception {
        long until = System.nanoTime() + SECONDS.toNanos(60);
        while (true) {
            try {
                return query.get().get(30, SECONDS);
            } catch (ExecutionException e) {
                assertInstanceOf(DbException.Unavailable.class, e.getCause());
                assertTrue(System.nanoTime() < until, "still failing 60 s after the server resumed: " + e.getCause());
                Thread.sleep(100);
            }
        }
    }

    /**
     * A read and a write that are waiting on the server when it pauses (each has begun: its
     * statement is sent, its answer awaited) fail within the database's deadline, not after PgJDBC's
     * 30 s socket timeout: the read saying the database did not answer, the write that its outcome is
     * unknown, and a write queued behind it that it was withdrawn, not applied. Once the server
     * resumes, reads and writes work again, the write whose outcome was unknown turns out committed,
     * and the withdrawn one never ran.
     */
    @Test
    void aReadAndAWriteWaitingOnAPausedServerFailWithinTheDeadlineAndWorkOnceItResumes() throws Exception {
        String url = TestPostgres.script("url", data.toString());
        Duration deadline = Duration.ofSeconds(1);  // the pause stays far below the writer's idle-in-transaction limit (5 s)
        try (Db db = Db.builder(PostgresEngine.open(url)).deadline(deadline).open()) {
            Table<Integer, String> t = db.table("notes", Codec.INT, Codec.STRING);
            db.write(txn -> { t.put(txn, 1, "before"); return null; }).get(30, SECONDS);
            CountDownLatch paused = new CountDownLatch(1);
            CountDownLatch readBegun = new CountDownLatch(1);
            CountDownLatch writeBegun = new CountDownLatch(1);
            AtomicInteger queuedRuns = new AtomicInteger();
            QueryFuture<Object> queued;
            long readAsked = System.nanoTime();
            QueryFuture<String> read = db.read(txn -> {
                t.get(txn, 1);  // the read's transaction is on the server now
                readBegun.countDown();
                paused.await(30, SECONDS);
                return t.get(txn, 1);  // sent to the paused server
            });
            long writeAsked = System.nanoTime();
            QueryFuture<Object> write = db.write(txn -> {  // the writer has its connection, the write lock and its transaction now
                writeBegun.countDown();
                paused.await(30, SECONDS);
                t.put(txn, 2, "while paused");  // its commit's statements go to the paused server
                return null;
            });
            assertTrue(readBegun.await(30, SECONDS) && writeBegun.await(30, SECONDS), "the read and the write began");
            signal("STOP");
            long queuedAsked = System.nanoTime();
            queued = db.write(txn -> {
                queuedRuns.incrementAndGet();
                t.put(txn, 3, "queued");
                return null;
            });
            paused.countDown();

            DbException.Unavailable late = failsInTime("the read", read, readAsked, deadline);
            assertFalse(assertInstanceOf(DbException.DeadlineExceeded.class, late).outcomeUnknown, late.getMessage());
            assertTrue(late.getMessage().startsWith("the database did not answer this read within its deadline of 1000 ms (PostgreSQL at "),
                late.getMessage());
            DbException.Unavailable unknown = failsInTime("the begun write", write, writeAsked, deadline);
            assertTrue(assertInstanceOf(DbException.DeadlineExceeded.class, unknown).outcomeUnknown, unknown.getMessage());
            assertTrue(unknown.getMessage().contains("whether it is applied is unknown"), unknown.getMessage());
            DbException.Unavailable withdrawn = failsInTime("the queued write", queued, queuedAsked, deadline);
            assertFalse(assertInstanceOf(DbException.DeadlineExceeded.class, withdrawn).outcomeUnknown, withdrawn.getMessage());
            assertTrue(withdrawn.getMessage().contains("it was withdrawn and never runs, so it is not applied"), withdrawn.getMessage());
            long anotherAsked = System.nanoTime();
            failsInTime("a read asked during the pause", db.read(txn -> t.get(txn, 1)), anotherAsked, deadline);  // a new read too, whichever way it fails

            signal("CONT");
            // queries still in flight from the pause may fail for a moment after it (and count the server
            // unreachable for 500 ms): the first of each kind to succeed shows the way back
            assertNull(once(() -> db.write(txn -> { t.put(txn, 4, "after"); return null; })), "writes work again");
            assertEquals("before", once(() -> db.read(txn -> t.get(txn, 1))), "reads work again");
            assertEquals("while paused", once(() -> db.read(txn -> t.get(txn, 2))), "the write whose outcome was unknown committed");
            assertNull(once(() -> db.read(txn -> t.get(txn, 3))), "the withdrawn write is not applied");
            assertEquals(0, queuedRuns.get(), "the withdrawn write never ran");
        }
    }
}

package kiln.db.postgresql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbHealth;
import kiln.db.Table;

/**
 * A PostgreSQL server that is paused (every process of it stopped with SIGSTOP, as a paused VM or a
 * stuck machine is): it accepts nothing and answers nothing, and no error comes. The database's
 * health answers within its deadline all the same, naming the problem, and is healthy again once
 * the server resumes. A server of its own, so the others' tests never pause.
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
        try (Db db = Db.builder(dir).engine(PostgresEngine.open(url)).open()) {
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
}

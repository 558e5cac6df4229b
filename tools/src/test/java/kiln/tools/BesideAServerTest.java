package kiln.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import kiln.db.Db;
import kiln.db.postgresql.PostgresServer;
import kiln.demo.DemoDb;

/**
 * Beside a running server the reading commands work, and the writing ones are refused with a
 * message that says why: on LMDB a server (another process) holds the directory's writers' lock;
 * on PostgreSQL a server's sessions are on the database.
 */
class BesideAServerTest {
    @RegisterExtension static final PostgresServer POSTGRES = new PostgresServer();
    @TempDir Path dir;
    private Process server;

    @AfterEach
    void stopServer() throws Exception {
        if (server != null && server.isAlive()) {
            server.destroyForcibly();
            server.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private Process startServer(String url) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), ServerMain.class.getName(), url));
        server = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        assertEquals("READY", out.readLine());
        return server;
    }

    @Test
    void onLmdbItReadsBesideTheServerAndRefusesToLoadIntoIt() throws Exception {
        Path data = dir.resolve("data");
        Process p = startServer(data.toString());

        Run stat = Run.of("stat", data.toString());
        assertEquals(0, stat.status(), stat.toString());
        assertTrue(stat.out().startsWith("lmdb " + data.toRealPath() + " (read-only): map "), stat.out());
        assertTrue(stat.out().contains("world "), stat.out());
        Path dump = dir.resolve("data.dump");
        Run d = Run.of("dump", data.toString(), "-o", dump.toString());
        assertEquals(0, d.status(), d.toString());
        assertEquals(0, Run.of("verify", data.toString()).status());

        Run load = Run.of("load", data.toString(), "-i", dump.toString());
        assertEquals(1, load.status());
        assertTrue(load.err().startsWith("kiln db: the database in " + data.toAbsolutePath() + " is open by another process that writes it (process "
            + p.pid() + ": a kiln server, or kiln db load)"), load.err());
        Run copy = Run.of("copy", dir.resolve("elsewhere").toString(), data.toString());
        assertEquals(1, copy.status());

        p.getOutputStream().close();  // the server stops
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        Run fresh = Run.of("load", "lmdb:" + dir.resolve("fresh"), "-i", dump.toString(), "-q");
        assertEquals(0, fresh.status(), fresh.toString());
        assertEquals(Contents.of(data.toString()), Contents.of("lmdb:" + dir.resolve("fresh")));
        assertTrue(Files.exists(dir.resolve("fresh").resolve("kiln.lock")));
    }

    @Test
    void onPostgresqlItReadsBesideTheServersAndRefusesToLoadWhileTheyAreConnected() throws Exception {
        String url = POSTGRES.url("served");
        Path source = dir.resolve("source");
        try (Db db = Db.open(source)) {
            DemoDb.open(db);
        }
        try (Db server = Db.open(url + "&ApplicationName=kiln-a")) {
            DemoDb.open(server);
            Run stat = Run.of("stat", url);
            assertEquals(0, stat.status(), stat.toString());
            assertTrue(stat.out().contains("world "), stat.out());

            Run copy = Run.of("copy", source.toString(), url, "--replace");
            assertEquals(1, copy.status());
            assertTrue(copy.err().matches("(?s).* has other clients \\([0-9]+ sessions? of user kiln \\('kiln-a'\\)\\).*"), copy.err());
            assertTrue(copy.err().contains("a kiln server may be using it"), copy.err());
        }
        // the server's sessions end as it closes, its listener's within its poll (1 s): until then a copy is refused for them
        long until = System.nanoTime() + 10_000_000_000L;
        Run copy = Run.of("copy", source.toString(), url, "-q");
        while (copy.err().contains("other clients") && System.nanoTime() < until) {
            Thread.sleep(200);
            copy = Run.of("copy", source.toString(), url, "-q");
        }
        assertEquals(1, copy.status(), "the servers' tables hold data");
        assertTrue(copy.err().contains("holds data already"), copy.err());
        Run replace = Run.of("copy", source.toString(), url, "--replace", "-q");
        assertEquals(0, replace.status(), replace.toString());
        assertEquals(Contents.of(source.toString()), Contents.of(url));
    }
}

package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The disk under the database failing, for every front end. A full disk is simulated with the
 * server's file-size limit (RLIMIT_FSIZE, set on the running process with util-linux
 * {@code prlimit}): LMDB's writes beyond it fail with EFBIG as they would with ENOSPC, and the JVM
 * ignores the SIGXFSZ that comes with them. The commit fails, the writes in it answer 500 with a
 * short message (details in the log), reads go on, and once the limit is lifted writes succeed
 * again; the database then closes cleanly with every acknowledged write in it. A data directory
 * the server cannot write stops it at start with a clear message.
 */
class FaultsTest {
    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void fullDiskFailsWritesWith500AndTheyRecover(FrontEnd fe) throws Exception {
        assumeTrue(prlimit(ProcessHandle.current().pid(), "--fsize") == 0, "util-linux prlimit is not available");
        ServerProcess s = ServerProcess.start(fe, "FaultsTest-disk");
        try {
            Map<Integer, Integer> acknowledged = new LinkedHashMap<>();
            Contract.acknowledge(acknowledged, Contract.getJson(s, "/updates?queries=500"));
            long size = Files.size(s.dataDir.resolve("data.mdb"));
            assertEquals(0, prlimit(s.pid(), "--fsize=" + size + ":"), "prlimit on the server");

            List<Integer> statuses = new ArrayList<>();
            String failure = null;
            for (int i = 0; i < 40 && failure == null; i++) {
                HttpResponse<byte[]> r = Contract.get(s, "/updates?queries=500");
                statuses.add(r.statusCode());
                if (r.statusCode() == 200) {
                    Contract.acknowledge(acknowledged, Contract.JSON.readTree(r.body()));
                } else {
                    failure = new String(r.body(), StandardCharsets.UTF_8);
                    assertEquals(500, r.statusCode(), "a write that cannot be committed: " + failure);
                }
            }
            String body = failure;
            assertTrue(body != null, () -> fe.id + " never failed a write with the data file limited to " + size + " bytes: " + statuses);
            assertTrue(body.length() < 200 && body.startsWith("500 "), () -> fe.id + " 500 body: " + body);
            assertEquals(200, Contract.get(s, "/db").statusCode(), "reads go on while writes fail");

            assertEquals(0, prlimit(s.pid(), "--fsize=unlimited:"), "prlimit on the server");
            Contract.acknowledge(acknowledged, Contract.getJson(s, "/updates?queries=500"));
            RobustnessTest.assertServesPromptly(s);

            int exit = s.stop();
            assertEquals(0, exit, () -> "exit code after SIGTERM; log:\n" + s.logText());
            List<String> lost = Contract.lostUpdates(acknowledged, Contract.storedWorlds(s.dataDir));
            assertTrue(lost.isEmpty(), () -> lost.size() + " acknowledged updates lost, e.g. " + lost.subList(0, Math.min(5, lost.size())));
            String log = s.logText();
            assertTrue(log.contains("commit of"), () -> fe.id + " did not log the failed commit; log:\n" + log);
        } finally {
            s.close();
        }
    }

    /**
     * A data directory the server cannot write stops the start: exit 1 and a message naming it.
     * As an ordinary user that is a directory with mode r-x; root writes there regardless, so as
     * root it is /proc, a directory no one can create files in.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void unwritableDataDirectoryStopsTheStartWithAClearMessage(FrontEnd fe) throws Exception {
        Files.createDirectories(Dirs.data());
        Path made = Files.createTempDirectory(Dirs.data(), "FaultsTest-readonly-" + fe.id + "-");
        try {
            Files.setPosixFilePermissions(made, PosixFilePermissions.fromString("r-xr-xr-x"));
            Path dir = Files.isWritable(made) ? Path.of("/proc") : made;
            Process p = new ProcessBuilder(ServerProcess.command(fe, dir, List.of())).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "did not exit");
            assertEquals(1, p.exitValue(), () -> fe.id + " on the unwritable directory " + dir + ":\n" + out);
            assertTrue(out.contains("error:") && out.contains(dir.toString()), () -> fe.id + " should name " + dir + ":\n" + out);
            assertFalse(out.contains("Exception in thread"), () -> fe.id + " should fail with one line, not a stack trace:\n" + out);
        } finally {
            Files.setPosixFilePermissions(made, PosixFilePermissions.fromString("rwxr-xr-x"));
            ServerProcess.deleteRecursively(made);
        }
    }

    /** Runs {@code prlimit --pid PID option}. @return its exit code (127 when it is missing) */
    private static int prlimit(long pid, String option) throws InterruptedException {
        try {
            Process p = new ProcessBuilder("prlimit", "--pid", Long.toString(pid), option).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1;
        } catch (IOException e) {
            return 127;
        }
    }
}

package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The disk under the database failing, for every front end, two ways: a real full file system
 * (ENOSPC: the data directory is a small tmpfs, filled by another file; needs root to mount) and
 * the server's file-size limit (RLIMIT_FSIZE, set on the running process with util-linux
 * {@code prlimit}: LMDB's writes beyond it fail with EFBIG, and the JVM ignores the SIGXFSZ that
 * comes with them). The commit fails, the writes in it answer 500 with a short message (details in
 * the log), reads go on, and once space returns writes succeed again; the database then closes
 * cleanly with every acknowledged write in it. A data directory the server cannot write stops it
 * at start with a clear message.
 */
class FaultsTest {
    /** The ENOSPC case's file system: room for the demo database and a few hundred updates; the test fills the rest. */
    private static final long TMPFS_BYTES = 16L << 20;

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void fileSizeLimitFailsWritesWith500AndTheyRecover(FrontEnd fe) throws Exception {
        String available = prlimit(ProcessHandle.current().pid(), "--fsize");
        assumeTrue(available == null, () -> "util-linux prlimit is not available: " + available);
        try (ServerProcess s = ServerProcess.start(fe, "FaultsTest-fsize")) {
            writesFailWith500AndRecover(s, "the data file limited to its size (RLIMIT_FSIZE)",
                () -> assertNull(prlimit(s.pid(), "--fsize=" + Files.size(s.dataDir.resolve("data.mdb")) + ":"), "prlimit on the server"),
                () -> assertNull(prlimit(s.pid(), "--fsize=unlimited:"), "prlimit on the server"));
        }
    }

    /**
     * A real full file system (ENOSPC): the server's data directory is a small tmpfs of its own,
     * filled up by a file beside the database and freed by deleting it. Mounting needs root
     * (CAP_SYS_ADMIN); without it the test is skipped and says why.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void fullFileSystemFailsWritesWith500AndTheyRecover(FrontEnd fe) throws Exception {
        Files.createDirectories(Dirs.data());
        Path mount = Files.createTempDirectory(Dirs.data(), "FaultsTest-enospc-" + fe.id + "-");
        String mounted = run("mount", "-t", "tmpfs", "-o", "size=" + TMPFS_BYTES, "tmpfs", mount.toString());
        if (mounted != null) Files.delete(mount);
        assumeTrue(mounted == null, () -> "cannot mount a tmpfs (needs root): " + mounted);
        try (ServerProcess s = ServerProcess.start(fe, mount, "FaultsTest-enospc")) {
            Path filler = mount.resolve("filler");
            writesFailWith500AndRecover(s, "its file system full (ENOSPC)",
                () -> fill(filler),
                () -> Files.delete(filler));
        } finally {
            String unmounted = run("umount", mount.toString());
            if (unmounted != null) run("umount", "-l", mount.toString());
            Files.deleteIfExists(mount);
        }
    }

    /** A step of a test that may throw anything. */
    interface Step {
        void run() throws Exception;
    }

    /**
     * The disk-full contract, whatever takes the disk away: with the disk {@code fill}ed, a write
     * that cannot be committed answers 500 with a short message (details in the log) and reads go on;
     * once {@code free}d, writes succeed again, and after SIGTERM every acknowledged write is stored.
     */
    private static void writesFailWith500AndRecover(ServerProcess s, String how, Step fill, Step free) throws Exception {
        String id = s.frontEnd.id;
        Map<Integer, Integer> acknowledged = new LinkedHashMap<>();
        Contract.acknowledge(acknowledged, Contract.getJson(s, "/updates?queries=500"));
        fill.run();

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
        assertTrue(body != null, () -> id + " never failed a write with " + how + ": " + statuses);
        assertTrue(body.length() < 200 && body.startsWith("500 "), () -> id + " 500 body: " + body);
        assertEquals(200, Contract.get(s, "/db").statusCode(), "reads go on while writes fail");

        free.run();
        Contract.acknowledge(acknowledged, Contract.getJson(s, "/updates?queries=500"));
        RobustnessTest.assertServesPromptly(s);

        int exit = s.stop();
        assertEquals(0, exit, () -> "exit code after SIGTERM; log:\n" + s.logText());
        List<String> lost = Contract.lostUpdates(acknowledged, Contract.storedWorlds(s.dataDir));
        assertTrue(lost.isEmpty(), () -> lost.size() + " acknowledged updates lost, e.g. " + lost.subList(0, Math.min(5, lost.size())));
        String log = s.logText();
        assertTrue(log.contains("commit of"), () -> id + " did not log the failed commit; log:\n" + log);
    }

    /** Writes {@code file} until its file system has no space left. */
    private static void fill(Path file) throws IOException {
        byte[] block = new byte[64 * 1024];
        try (var out = Files.newOutputStream(file)) {
            for (int i = 0; i < (int) (TMPFS_BYTES / block.length) + 1; i++) out.write(block);
        } catch (IOException e) {
            if (e.getMessage() == null || !e.getMessage().contains("No space left")) throw e;
            return;
        }
        throw new AssertionError("wrote " + TMPFS_BYTES + " bytes to " + file + " without filling its file system");
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
            Command started = Command.run(60, ServerProcess.command(fe, dir, List.of()));
            String out = started.output;
            assertEquals(1, started.exitCode, () -> fe.id + " on the unwritable directory " + dir + ":\n" + out);
            assertTrue(out.contains("error:") && out.contains(dir.toString()), () -> fe.id + " should name " + dir + ":\n" + out);
            assertFalse(out.contains("Exception in thread"), () -> fe.id + " should fail with one line, not a stack trace:\n" + out);
        } finally {
            Files.setPosixFilePermissions(made, PosixFilePermissions.fromString("rwxr-xr-x"));
            ServerProcess.deleteRecursively(made);
        }
    }

    /** Runs {@code command}. @return null when it succeeds, else its exit code and output, or why it did not start */
    private static String run(String... command) throws InterruptedException {
        try {
            Command c = Command.run(30, List.of(command));
            return c.exitCode == 0 ? null : "exit " + c.exitCode + ": " + c.output.trim();
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    /** Runs {@code prlimit --pid PID option}. @return null when it succeeds, else why not */
    private static String prlimit(long pid, String option) throws InterruptedException {
        return run("prlimit", "--pid", Long.toString(pid), option);
    }
}

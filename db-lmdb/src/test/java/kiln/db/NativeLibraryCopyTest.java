package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * lmdbjava copies its bundled liblmdb into java.io.tmpdir at its first use; a process that opened
 * a database and then ended as a kiln server does (halt, no shutdown hooks) must leave no copy there.
 */
class NativeLibraryCopyTest {
    @TempDir Path dir;

    @Test
    void aProcessThatOpenedTheDatabaseLeavesNoCopyOfTheLibraryInItsTemporaryDirectory() throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        List<String> cmd = new ArrayList<>(ChildJvm.command(HaltMain.class, dir.resolve("data").toString()));
        cmd.add(1, "-Djava.io.tmpdir=" + tmp);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child did not end: " + out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("OK one"), out);
        try (Stream<Path> left = Files.list(tmp)) {
            assertEquals(List.of(), left.map(f -> f.getFileName().toString()).toList());
        }
    }
}

package kiln.powercut;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import picocli.CommandLine;

/**
 * Power cuts under load (`make powercut` with a small count): no acknowledged write lost, every
 * check passes; and the same harness finds the losses of a database that does not fsync. Needs
 * FUSE: it fails, naming what to install, where the power-cut filesystem cannot mount.
 */
class PowerCutTest {
    @TempDir Path dir;

    private static PowerCut.Totals run(Path dir, String... args) throws Exception {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        PowerCut cut = new PowerCut(new PrintStream(text, true, StandardCharsets.UTF_8));
        new CommandLine(cut).parseArgs(args);
        cut.fs = Path.of(System.getProperty("kiln.powercut.fs", "fs/powercutfs.py"));
        cut.dir = dir;
        PowerCut.Totals totals = cut.run();
        System.out.print(text.toString(StandardCharsets.UTF_8));
        return totals;
    }

    @Test
    void noAcknowledgedWriteIsLostToPowerCutsAndEveryCheckPasses() throws Exception {
        PowerCut.Totals t = run(dir, "--cuts", "12", "--seed", "20261126");
        assertEquals(0, t.lost(), t.summary());
        assertEquals(0, t.failedChecks(), String.join("\n", t.problems()));
        assertTrue(t.acknowledged() > 1000 && t.committed() >= t.acknowledged(), t.summary());
    }

    @Test
    void theHarnessFindsTheLossesOfADatabaseThatDoesNotFsync() throws Exception {
        PowerCut.Totals t = run(dir, "--cuts", "3", "--seed", "7", "--no-sync");
        assertTrue(t.lost() > 0, "MDB_NOSYNC lost no acknowledged write? " + t.summary());
        assertTrue(t.failedChecks() > 0, t.summary());
    }
}

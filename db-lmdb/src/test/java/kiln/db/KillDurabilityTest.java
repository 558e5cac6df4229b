package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A write whose future completed is on disk: it survives SIGKILL of the process right after. */
class KillDurabilityTest {
    private static final int ACKS_BEFORE_KILL = 300;

    @TempDir Path dir;

    @Test
    void acknowledgedWritesSurviveKill9() throws Exception {
        Path data = dir.resolve("data");
        Path stderr = dir.resolve("child-stderr.txt");
        Process child = new ProcessBuilder(ChildJvm.command(KillWriterMain.class, data.toString(), "4")).redirectError(stderr.toFile()).start();

        // The kill is sent from the thread that reads the ACKs, the moment the last one arrives, so
        // it lands while the child's next commits are in flight.
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        Thread pump = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    lines.add(line);
                    if (lines.size() == ACKS_BEFORE_KILL) child.destroyForcibly(); // SIGKILL: no hooks, no close()
                }
            } catch (IOException ignored) {
                // the pipe breaks when the child dies; everything read before is in `lines`
            }
        }, "child-stdout");
        pump.start();
        pump.join(TimeUnit.SECONDS.toMillis(60));
        boolean killedInTime = !pump.isAlive();
        child.destroyForcibly();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS), "child did not die");
        pump.join(TimeUnit.SECONDS.toMillis(30));
        assertTrue(killedInTime && lines.size() >= ACKS_BEFORE_KILL,
            "child gave " + lines.size() + " ACKs in 60 s; stderr: " + Files.readString(stderr));
        assertEquals(137, child.exitValue(), "killed by SIGKILL (128 + 9)");
        // ACKs read after the kill was sent were printed before it, so they count too
        List<Integer> acked = new ArrayList<>();
        synchronized (lines) {
            for (String line : lines) acked.add(parseAck(line));
        }

        try (Db db = Db.open(data)) {
            Table<Integer, String> table = db.table("acked", Codec.INT, Codec.STRING);
            List<Integer> lost = new ArrayList<>();
            db.read(txn -> {
                for (int k : acked) {
                    if (!KillWriterMain.valueOf(k).equals(table.get(txn, k))) lost.add(k);
                }
                return null;
            }).join();
            assertEquals(List.of(), lost, "acknowledged keys missing after kill -9 (of " + acked.size() + " ACKs)");
        }
    }

    private static int parseAck(String line) {
        if (!line.startsWith("ACK ")) fail("unexpected child output: " + line);
        return Integer.parseInt(line.substring(4));
    }
}

package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code --backup DIR} run as a second process beside a serving front end, while clients send
 * /updates: the copy opens, holds every update acknowledged before the backup began (and no value
 * nobody wrote, and no value an acknowledged update had already replaced), and the same front end
 * started on the restored directory serves it.
 *
 * <p>Why the check is exact: the clients stop only after their last answer, so every update that
 * was committed was also acknowledged, with its send and answer times. For each id, an
 * acknowledgement answered before the backup began is <i>superseded</i> when another one for that
 * id was sent after it was answered, and also answered before the backup began: that write
 * committed later, so the snapshot cannot hold the earlier value (unless some other write gave the
 * id that value too).
 */
class BackupTest {
    private static final int CLIENTS = 4;
    private static final int ROWS = 20;
    private static final Pattern BACKED_UP = Pattern.compile("(kiln-[a-z]+): backed up (\\S+) to (\\S+): (\\d+) bytes \\(\\d+\\.\\d MiB\\)");

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    /** One acknowledged update of one row. */
    private static final class Ack {
        final int value;
        final long sent;
        final long answered;

        Ack(int value, long sent, long answered) {
            this.value = value;
            this.sent = sent;
            this.answered = answered;
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aBackupTakenUnderUpdatesHoldsEveryAcknowledgedUpdateAndRestores(FrontEnd fe) throws Exception {
        Path work = Files.createDirectories(Dirs.data()).resolve("BackupTest-" + fe.id + "-" + System.nanoTime());
        Files.createDirectories(work);
        try (ServerProcess s = ServerProcess.start(fe, "BackupTest")) {
            // an idle backup first: the values before any update
            Map<Integer, Integer> initial = Contract.storedWorlds(backup(fe, s.dataDir, work.resolve("idle")));

            Map<Integer, List<Ack>> acks = new ConcurrentHashMap<>();
            ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
            AtomicInteger answers = new AtomicInteger();
            AtomicBoolean stop = new AtomicBoolean();
            ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
            long began;
            int answeredBefore;
            int answeredDuring;
            Path copy;
            try {
                for (int c = 0; c < CLIENTS; c++) {
                    clients.execute(() -> {
                        while (!stop.get()) {
                            long sent = System.nanoTime();
                            try {
                                HttpResponse<byte[]> r = Contract.get(s, "/updates?queries=" + ROWS);
                                long answered = System.nanoTime();
                                if (r.statusCode() != 200) {
                                    failures.add(r.statusCode() + " " + new String(r.body(), StandardCharsets.UTF_8));
                                    continue;
                                }
                                for (JsonNode row : Contract.JSON.readTree(r.body())) {
                                    int[] w = Contract.assertWorld(row);
                                    acks.computeIfAbsent(w[0], id -> java.util.Collections.synchronizedList(new ArrayList<>()))
                                        .add(new Ack(w[1], sent, answered));
                                }
                                answers.incrementAndGet();
                            } catch (IOException | RuntimeException | AssertionError e) {
                                failures.add(e.toString());
                                return;
                            }
                        }
                    });
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (answers.get() < 50 && System.nanoTime() < deadline) Thread.sleep(10);
                answeredBefore = answers.get();
                began = System.nanoTime();
                copy = backup(fe, s.dataDir, work.resolve("busy"));
                answeredDuring = answers.get() - answeredBefore;
            } finally {
                stop.set(true);
                clients.shutdown();
                assertTrue(clients.awaitTermination(30, TimeUnit.SECONDS), "clients did not finish");
            }
            assertTrue(failures.isEmpty(), () -> "requests failed, so not every committed update is known: " + failures);
            assertTrue(answeredBefore >= 50, "only " + answeredBefore + " updates answered before the backup");
            assertTrue(answeredDuring > 0, "no update was answered while the backup ran: it did not overlap the load");

            Map<Integer, Integer> stored = Contract.storedWorlds(copy);
            List<String> wrong = new ArrayList<>();
            int checked = 0;
            for (Map.Entry<Integer, List<Ack>> e : acks.entrySet()) {
                int id = e.getKey();
                int value = stored.get(id);
                List<Ack> all;
                synchronized (e.getValue()) {
                    all = new ArrayList<>(e.getValue());
                }
                List<Ack> before = new ArrayList<>();
                for (Ack a : all) if (a.answered < began) before.add(a);
                if (before.isEmpty()) {
                    if (value != initial.get(id) && all.stream().noneMatch(a -> a.value == value)) {
                        wrong.add("id " + id + ": holds " + value + ", which no update wrote");
                    }
                    continue;
                }
                checked++;
                Set<Integer> current = new java.util.HashSet<>();  // values not superseded before the backup
                for (Ack a : all) {
                    boolean superseded = a.answered < began && before.stream().anyMatch(b -> b.sent > a.answered);
                    if (!superseded) current.add(a.value);
                }
                if (!current.contains(value)) {
                    wrong.add("id " + id + ": holds " + value + (value == initial.get(id) ? " (its value before any update)" : "")
                        + "; acknowledged before the backup " + before.stream().map(a -> a.value).toList()
                        + ", possible " + current);
                }
            }
            int rows = checked;
            assertTrue(rows > 100, "only " + rows + " rows acknowledged before the backup");
            assertTrue(wrong.isEmpty(), () -> wrong.size() + " rows of the backup miss an acknowledged update, e.g. "
                + wrong.subList(0, Math.min(10, wrong.size())) + "\n--- " + s.log + " ---\n" + s.logText());
            System.out.println(fe.id + ": backup under load: " + answeredBefore + " updates answered before it, " + answeredDuring
                + " during it; " + rows + " rows acknowledged before it all hold their update");

            // restore: a fresh data directory holding only the copy's data.mdb
            Path restored = Files.createDirectories(work.resolve("restored"));
            Files.copy(copy.resolve("data.mdb"), restored.resolve("data.mdb"));
            try (ServerProcess again = ServerProcess.start(fe, restored, "BackupTest-restored")) {
                HttpResponse<byte[]> health = Contract.get(again, "/healthz");
                assertEquals(200, health.statusCode());
                assertEquals("ok", new String(health.body(), StandardCharsets.UTF_8));
                int compared = 0;
                for (int i = 0; i < 3; i++) {
                    for (JsonNode row : Contract.getJson(again, "/queries?queries=500")) {
                        int[] w = Contract.assertWorld(row);
                        assertEquals(stored.get(w[0]), w[1], "the restored server serves row " + w[0] + " as the backup holds it");
                        compared++;
                    }
                }
                assertEquals(1500, compared);
                assertEquals(ROWS, Contract.getJson(again, "/updates?queries=" + ROWS).size(), "the restored database takes writes");
            }
        } finally {
            ServerProcess.deleteRecursively(work);
        }
    }

    /** The CLI's refusals: one line, exit 1, and the target left as it was. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aBackupIntoANonEmptyDirectoryOrFromNoDatabaseFailsWithOneLine(FrontEnd fe) throws Exception {
        Path work = Files.createDirectories(Dirs.data()).resolve("BackupTest-refused-" + fe.id + "-" + System.nanoTime());
        try {
            Path full = Files.createDirectories(work.resolve("full"));
            Files.writeString(full.resolve("keep.txt"), "mine");
            Path data = Files.createDirectories(work.resolve("data"));
            Command notEmpty = runBackup(fe, data, full);
            // no database in data/ is checked first
            assertEquals(1, notEmpty.exitCode, notEmpty.output);
            assertEquals(fe.program() + ": error: no database to back up in " + data.toAbsolutePath()
                + " (no data.mdb there); give the server's --data directory", notEmpty.output.strip());

            try (ServerProcess s = ServerProcess.start(fe, "BackupTest-refused")) {
                Command refused = runBackup(fe, s.dataDir, full);
                assertEquals(1, refused.exitCode, refused.output);
                assertEquals(fe.program() + ": error: backup directory " + full.toAbsolutePath()
                    + " is not empty; give a new or empty directory", refused.output.strip());
                assertEquals(List.of("keep.txt"), list(full));
            }
        } finally {
            ServerProcess.deleteRecursively(work);
        }
    }

    /** Runs {@code --backup target} on {@code data} and checks its one line. @return the backup directory */
    private static Path backup(FrontEnd fe, Path data, Path target) throws Exception {
        Command c = runBackup(fe, data, target);
        assertEquals(0, c.exitCode, () -> "--backup failed:\n" + c.output);
        Matcher m = BACKED_UP.matcher(c.output.strip());
        assertTrue(m.matches(), () -> "one line naming the copy and its size, got:\n" + c.output);
        assertEquals(fe.program(), m.group(1));
        assertEquals(data.toAbsolutePath().toString(), m.group(2));
        Path file = target.toAbsolutePath().resolve("data.mdb");
        assertEquals(file.toString(), m.group(3));
        assertEquals(Files.size(file), Long.parseLong(m.group(4)), "the size printed is the file's");
        assertEquals(List.of("data.mdb"), list(target));
        return target;
    }

    private static Command runBackup(FrontEnd fe, Path data, Path target) throws Exception {
        List<String> cmd = ServerProcess.command(fe, data, List.of("--backup", target.toString()));
        return Command.run(60, cmd);
    }

    private static List<String> list(Path dir) throws IOException {
        try (var s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}

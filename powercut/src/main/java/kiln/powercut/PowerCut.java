package kiln.powercut;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code make powercut CUTS=N}: power cuts under load, each followed by the checks of {@link Check}.
 *
 * <p>One cut: the power-cut filesystem is mounted over the backing directory; a child JVM
 * ({@link PowerCutLoad}) writes durably from several threads and follows the change feed, printing
 * what was acknowledged; after a random 0.2-1.5 s it is SIGKILLed and the layer cut (every write not
 * yet fsynced dropped, or on every other cut a random half of them kept, as a disk that had written
 * some in any order); then the filesystem is mounted again and the database reopened on what reached
 * the disk and checked. The last line is the summary:
 * {@code cuts: N, acknowledged writes lost: 0, ...}; the exit status is 0 only when every check of
 * every cut passed.
 */
@Command(name = "powercut", mixinStandardHelpOptions = true,
    description = "Power cuts under a load of durable writes, each followed by reopening the database and checking it.")
public final class PowerCut implements Callable<Integer> {
    @Option(names = "--cuts", defaultValue = "20", description = "Power cuts to make (default: ${DEFAULT-VALUE}).")
    int cuts;

    @Option(names = "--writers", defaultValue = "4", description = "Writer threads in the load process (default: ${DEFAULT-VALUE}).")
    int writers;

    @Option(names = "--seed", description = "Seed of the random moments and kept pages (default: from the clock; printed).")
    Long seed;

    @Option(names = "--dir", description = "Working directory: backing/ (the disk) and mnt/ (the mount) (default: a new temporary directory).")
    Path dir;

    @Option(names = "--fs", defaultValue = "powercut/fs/powercutfs.py", description = "The power-cut filesystem (default: ${DEFAULT-VALUE}).")
    Path fs;

    @Option(names = "--no-sync", description = "Open LMDB with MDB_NOSYNC: commits are not fsynced, so the checks must find lost writes.")
    boolean noSync;

    @Option(names = "--min-ms", defaultValue = "200", description = "Shortest load before a cut, ms (default: ${DEFAULT-VALUE}).")
    long minMs;

    @Option(names = "--max-ms", defaultValue = "1500", description = "Longest load before a cut, ms (default: ${DEFAULT-VALUE}).")
    long maxMs;

    private final PrintStream out;

    PowerCut(PrintStream out) {
        this.out = out;
    }

    /** The totals of a run; {@link #summary} is its last line. */
    record Totals(int cuts, long acknowledged, long lost, long committed, int failedChecks, List<String> problems) {
        String summary() {
            return "cuts: " + cuts + ", acknowledged writes lost: " + lost + ", acknowledged writes: " + acknowledged
                + ", writes committed: " + committed + ", cuts whose checks failed: " + failedChecks;
        }
    }

    public static void main(String[] args) {
        PowerCut run = new PowerCut(System.out);
        System.exit(new CommandLine(run).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Totals t = run();
        return t.lost == 0 && t.failedChecks == 0 ? 0 : 1;
    }

    Totals run() throws IOException, InterruptedException {
        long s = seed != null ? seed : System.nanoTime();
        Random random = new Random(s);
        Path work = dir != null ? dir : Files.createTempDirectory("powercut-");
        Path backing = work.resolve("backing");
        Path mnt = work.resolve("mnt");
        out.println("powercut: " + cuts + " cuts, " + writers + " writers" + (noSync ? ", MDB_NOSYNC (writes are not fsynced)" : "")
            + ", seed " + s + ", in " + work.toAbsolutePath());
        long[] acked = new long[writers];
        long maxSeen = 0;
        long acknowledged = 0;
        long lost = 0;
        long committed = 0;
        int failed = 0;
        List<String> problems = new ArrayList<>();
        for (int cut = 1; cut <= cuts + 1; cut++) {
            Layer layer = Layer.mount(fs, backing, mnt);
            try {
                if (cut > 1) {
                    Check.Result r = Check.inChild(mnt, acked, maxSeen);
                    boolean unreadable = r.problems().stream().anyMatch(p -> p.startsWith("verify") || p.startsWith("the database does not open"));
                    long lostNow = unreadable ? java.util.Arrays.stream(acked).sum() : r.lost();  // an unreadable database lost them all
                    lost += lostNow;
                    committed = r.lastSeq();
                    if (!r.problems().isEmpty()) {
                        failed++;
                        for (String p : r.problems()) problems.add("after cut " + (cut - 1) + ": " + p);
                    }
                    out.println("  after cut " + (cut - 1) + ": " + r.lastSeq() + " writes committed, " + lostNow + " acknowledged lost"
                        + (r.problems().isEmpty() ? ", checks pass" : ", " + String.join("; ", r.problems())));
                    System.arraycopy(r.committed(), 0, acked, 0, writers);  // the new truth: losses are counted once
                    maxSeen = r.lastSeq();
                    if (unreadable) {  // start afresh on an empty disk
                        layer.cut(null);
                        wipe(backing);
                        layer = Layer.mount(fs, backing, mnt);
                    }
                }
                if (cut > cuts) break;
                Load load = Load.start(mnt, writers, noSync);
                Thread.sleep(minMs + (long) (random.nextDouble() * (maxMs - minMs)));
                load.kill();
                for (int w = 0; w < writers; w++) {
                    acknowledged += Math.max(0, load.acked[w] - acked[w]);
                    acked[w] = Math.max(acked[w], load.acked[w]);
                }
                maxSeen = Math.max(maxSeen, load.maxSeen);
                Long keep = cut % 2 == 0 ? random.nextLong() : null;
                String response = layer.cut(keep);
                out.println("cut " + cut + "/" + cuts + ": " + load.ackLines + " acknowledged in this run, " + response);
            } finally {
                layer.close();
            }
        }
        Totals t = new Totals(cuts, acknowledged, lost, committed, failed, problems);
        for (String p : problems) out.println("  problem " + p);
        out.println(t.summary());
        if (dir == null) wipe(work);
        return t;
    }

    private static void wipe(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }

    /** The load process of one cut, and what it acknowledged before it was killed. */
    static final class Load {
        final Process process;
        final long[] acked;
        long maxSeen;
        long ackLines;
        private final Thread pump;

        private Load(Process process, int writers) {
            this.process = process;
            this.acked = new long[writers];
            this.pump = new Thread(this::pump, "load-stdout");
        }

        static Load start(Path data, int writers, boolean noSync) throws IOException, InterruptedException {
            List<String> cmd = new ArrayList<>(ChildJvm.command(PowerCutLoad.class));
            cmd.add(data.toString());
            cmd.add(Integer.toString(writers));
            if (noSync) cmd.add("--no-sync");
            Load load = new Load(new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start(), writers);
            load.pump.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            synchronized (load) {
                while (!load.ready && System.nanoTime() < deadline && load.process.isAlive()) load.wait(100);
                if (!load.ready) {
                    load.process.destroyForcibly();
                    throw new IOException("the load process did not start (exit " + (load.process.isAlive() ? "none" : load.process.exitValue()) + ")");
                }
            }
            return load;
        }

        private boolean ready;

        private void pump() {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    synchronized (this) {
                        if (line.equals("READY")) {
                            ready = true;
                            notifyAll();
                        } else if (line.startsWith("A ")) {
                            String[] f = line.split(" ");
                            int w = Integer.parseInt(f[1]);
                            acked[w] = Math.max(acked[w], Long.parseLong(f[2]));
                            ackLines++;
                        } else if (line.startsWith("S ")) {
                            maxSeen = Math.max(maxSeen, Long.parseLong(line.substring(2)));
                        }
                    }
                }
            } catch (IOException ignored) {
                // the process died; every line it printed before was read
            }
        }

        /** SIGKILL; returns once every line the process printed is counted. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
            pump.join(TimeUnit.SECONDS.toMillis(30));
        }
    }
}

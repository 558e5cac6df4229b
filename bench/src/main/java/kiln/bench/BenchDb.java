package kiln.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * {@code make bench-db}: measures, in one run, (1) point reads through {@code db.read} against raw
 * lmdbjava (JMH, see {@link ReadBench}) and (2) durable writes per second with group commit against
 * one commit per write at 1, 16 and 256 writes in flight ({@link WriteBench}), in {@value #ROUNDS}
 * rounds that each measure every point once, then prints a table of medians (~2 minutes); then (3)
 * the data model's operations beside raw lmdbjava ({@link ModelBench}, one JMH run, ~1 minute; alone
 * with {@code --model}, {@code make bench-db ONLY=model}).
 *
 * <p>Run it with the lmdbjava JVM flags; JMH's forked JVMs get this JVM's arguments. Data lives under
 * {@code -Dkiln.bench.dir} (see {@link BenchDirs}); the table names its filesystem, because durable
 * write figures are fsync figures. Targets (issue 2): db.read at least 50% of raw renew/get/reset;
 * group commit at least 20x one commit per write at 256 writers. Missing a target is reported, not
 * an error: the figures depend on the machine.
 */
public final class BenchDb {
    private static final int ROUNDS = 5;
    static final int[] WRITERS = {1, 16, 256};
    private static final long WARMUP_MS = 300;
    private static final long MEASURE_MS = 1500;
    static final String[] READS = {"dbRead", "rawRenewGetReset", "rawGetInOneTxn"};
    private static final String[] READ_LABELS = {
        "db.read(txn -> table.get(txn, k)).join()",
        "raw lmdbjava: renew(), get, reset() per read",
        "raw lmdbjava: get in one long-lived txn (upper bound)",
    };

    private BenchDb() {
    }

    public static void main(String[] args) throws RunnerException, IOException, InterruptedException {
        if (args.length == 1 && args[0].equals("--one-round")) {
            oneRound();
            return;
        }
        boolean modelOnly = args.length == 1 && args[0].equals("--model");
        Path root = BenchDirs.root();
        Files.createDirectories(root);
        FileStore store = Files.getFileStore(root);
        System.out.println("kiln bench-db");
        System.out.println("  machine: " + Runtime.getRuntime().availableProcessors() + " CPUs (" + cpuModel() + "), JDK "
            + System.getProperty("java.version") + ", load average at start " + loadAverage());
        System.out.println("  data:    " + root + " on " + store.type() + " (" + store.name() + ")");
        System.out.println();
        if (modelOnly) {
            printModel(modelBenchmarks());
            return;
        }
        System.out.println("  " + ROUNDS + " rounds, each measuring every point once; the host's speed drifts, so"
            + " figures are medians over rounds and each ratio is the median of per-round ratios");
        System.out.println();

        // [round][benchmark] ops/s, and [round][concurrency][group, single] writes/s and group's average batch
        double[][] reads = new double[ROUNDS][];
        double[][][] writes = new double[ROUNDS][WRITERS.length][2];
        double[][] batches = new double[ROUNDS][WRITERS.length];
        for (int round = 0; round < ROUNDS; round++) {
            System.err.printf("bench-db: round %d/%d: point reads (JMH, ~13 s), durable writes (~13 s)%n", round + 1, ROUNDS);
            reads[round] = readBenchmarks();
            for (int i = 0; i < WRITERS.length; i++) {
                WriteBench.Point group = WriteBench.run(WRITERS[i], true, WARMUP_MS, MEASURE_MS);
                WriteBench.Point single = WriteBench.run(WRITERS[i], false, WARMUP_MS, MEASURE_MS);
                writes[round][i][0] = group.writesPerSecond;
                writes[round][i][1] = single.writesPerSecond;
                batches[round][i] = group.averageBatch;
            }
        }
        printReads(reads);
        System.out.println();
        printWrites(writes, batches);
        System.out.println();
        System.err.println("bench-db: the data model beside raw lmdbjava (JMH, ~1 minute)");
        printModel(modelBenchmarks());
    }

    /** The rows of the data model's table: label, kiln's benchmark, raw lmdbjava's, and the goal for kiln / raw (0: none). */
    private static final Object[][] MODEL = {
        {"point read", "kilnPointRead", "rawPointRead", 1.2},
        {"20-row page", "kilnPage", "rawPage", 1.3},
        {"20-row page, reversed", "kilnPageReverse", "rawPageReverse", 1.3},
        {"20-row page ending its range (no token)", "kilnPageLast", "rawPage", 0.0},
        {"index lookup (entry, then row)", "kilnIndexGet", "rawIndexGet", 0.0},
        {"durable write", "kilnWrite", "rawWrite", 0.0},
        {"durable write, one index", "kilnWriteIndexed", "rawWriteIndexed", 0.0},
    };

    /** @return ns/op of every {@link ModelBench} benchmark, by name */
    private static java.util.Map<String, Double> modelBenchmarks() throws RunnerException {
        List<String> jvmArgs = ManagementFactory.getRuntimeMXBean().getInputArguments();
        Options options = new OptionsBuilder()
            .include(ModelBench.class.getName() + "\\.")
            .jvmArgs(jvmArgs.toArray(new String[0]))
            .verbosity(VerboseMode.SILENT)
            .shouldFailOnError(true)
            .build();
        java.util.Map<String, Double> ns = new java.util.HashMap<>();
        for (RunResult r : new Runner(options).run()) {
            String benchmark = r.getParams().getBenchmark();
            ns.put(benchmark.substring(benchmark.lastIndexOf('.') + 1), r.getPrimaryResult().getScore());
        }
        return ns;
    }

    private static void printModel(java.util.Map<String, Double> ns) {
        System.out.println("The data model beside raw lmdbjava doing the same work: 1 thread, 10,000-row int table, an index by value"
            + " (JMH, 1 fork x (2 x 1 s warmup + 3 x 1 s measured), one run)");
        String row = "  %-40s %12s %12s %12s %10s%n";
        System.out.printf(row, "", "kiln ns/op", "raw ns/op", "kiln / raw", "goal");
        for (Object[] m : MODEL) {
            double kiln = ns.get((String) m[1]);
            double raw = ns.get((String) m[2]);
            double goal = (Double) m[3];
            System.out.printf(row, m[0], ops(kiln), ops(raw), String.format("%.2fx", kiln / raw),
                goal == 0 ? "-" : String.format("<= %.1fx %s", goal, kiln / raw <= goal ? "met" : "NOT met"));
        }
        double indexed = ns.get("kilnWriteIndexed") / ns.get("kilnWrite");
        System.out.printf("  kiln's durable write with one index / without: %.2fx (goal <= 1.3x: %s)%n", indexed,
            indexed <= 1.3 ? "met" : "NOT met");
    }

    /**
     * One round of every point, printed for {@link CompareDb} (which runs it against two builds of
     * kiln-db): {@code READ name ops/s} per read benchmark, {@code WRITE writers group/s single/s batch}
     * per write point.
     */
    private static void oneRound() throws RunnerException, InterruptedException, IOException {
        Files.createDirectories(BenchDirs.root());
        double[] reads = readBenchmarks();
        for (int b = 0; b < READS.length; b++) System.out.println("READ " + READS[b] + " " + reads[b]);
        for (int w : WRITERS) {
            WriteBench.Point group = WriteBench.run(w, true, WARMUP_MS, MEASURE_MS);
            WriteBench.Point single = WriteBench.run(w, false, WARMUP_MS, MEASURE_MS);
            System.out.println("WRITE " + w + " " + group.writesPerSecond + " " + single.writesPerSecond + " " + group.averageBatch);
        }
    }

    /** @return ops/s of each of {@link #READS}, in that order */
    private static double[] readBenchmarks() throws RunnerException {
        List<String> jvmArgs = ManagementFactory.getRuntimeMXBean().getInputArguments();
        Options options = new OptionsBuilder()
            .include(ReadBench.class.getName() + "\\.")
            .jvmArgs(jvmArgs.toArray(new String[0]))
            .verbosity(VerboseMode.SILENT)
            .shouldFailOnError(true)
            .build();
        double[] opsPerSecond = new double[READS.length];
        for (RunResult r : new Runner(options).run()) {
            String benchmark = r.getParams().getBenchmark();
            int i = List.of(READS).indexOf(benchmark.substring(benchmark.lastIndexOf('.') + 1));
            opsPerSecond[i] = r.getPrimaryResult().getScore();
        }
        return opsPerSecond;
    }

    private static void printReads(double[][] reads) {
        System.out.println("Point reads: 1 thread, 10,000-row int table, random existing keys"
            + " (JMH, per round 1 fork x (1 s warmup + 2 x 1 s measured))");
        String row = "  %-54s %12s %25s %8s%n";
        System.out.printf(row, "", "ops/s", "range over rounds", "vs raw");
        for (int b = 0; b < READS.length; b++) {
            double[] ops = column(reads, b);
            double[] ratio = new double[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) ratio[r] = reads[r][b] / reads[r][1];
            System.out.printf(row, READ_LABELS[b], ops(median(ops)), ops(min(ops)) + " - " + ops(max(ops)), percent(median(ratio)));
        }
        double[] ratio = new double[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) ratio[r] = reads[r][0] / reads[r][1];
        System.out.printf("  db.read / raw renew-get-reset: %s (rounds: %s; target >= 50%%: %s)%n", percent(median(ratio)),
            percents(ratio), median(ratio) >= 0.5 ? "met" : "NOT met");
    }

    private static void printWrites(double[][][] writes, double[][] batches) {
        System.out.println("Durable writes (one fsync'ed commit per batch), one random int row each, N writes kept in flight"
            + " (plain harness, per round and point " + WARMUP_MS + " ms warmup + " + MEASURE_MS + " ms measured)");
        String row = "  %-8s %17s %10s %17s %14s   %s%n";
        System.out.printf(row, "writers", "group commit w/s", "avg batch", "maxBatch(1) w/s", "group/single", "ratio per round");
        double last = 0;
        for (int i = 0; i < WRITERS.length; i++) {
            double[] group = new double[ROUNDS];
            double[] single = new double[ROUNDS];
            double[] ratio = new double[ROUNDS];
            double[] batch = new double[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                group[r] = writes[r][i][0];
                single[r] = writes[r][i][1];
                ratio[r] = group[r] / single[r];
                batch[r] = batches[r][i];
            }
            last = median(ratio);
            System.out.printf(row, WRITERS[i], ops(median(group)), String.format("%.1f", median(batch)), ops(median(single)),
                String.format("%.1fx", last), times(ratio));
        }
        System.out.printf("  group / single at %d writers: %.1fx (target >= 20x: %s)%n", WRITERS[WRITERS.length - 1], last,
            last >= 20 ? "met" : "NOT met");
    }

    private static double[] column(double[][] m, int c) {
        double[] out = new double[m.length];
        for (int r = 0; r < m.length; r++) out[r] = m[r][c];
        return out;
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static double min(double[] v) {
        return Arrays.stream(v).min().orElse(Double.NaN);
    }

    static double max(double[] v) {
        return Arrays.stream(v).max().orElse(Double.NaN);
    }

    private static String percents(double[] ratios) {
        return Arrays.stream(ratios).mapToObj(BenchDb::percent).collect(Collectors.joining(" "));
    }

    private static String times(double[] ratios) {
        return Arrays.stream(ratios).mapToObj(r -> String.format("%.1fx", r)).collect(Collectors.joining(" "));
    }

    static String ops(double v) {
        return String.format("%,.0f", v);
    }

    static String percent(double ratio) {
        return String.format("%.0f%%", ratio * 100);
    }

    static String cpuModel() throws IOException {
        Path cpuinfo = Path.of("/proc/cpuinfo");
        if (!Files.isReadable(cpuinfo)) return System.getProperty("os.arch");
        try (Stream<String> lines = Files.lines(cpuinfo)) {
            return lines.filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).trim())
                .findFirst().orElse(System.getProperty("os.arch"));
        }
    }

    static String loadAverage() throws IOException {
        Path loadavg = Path.of("/proc/loadavg");
        if (!Files.isReadable(loadavg)) return "unknown";
        String[] f = Files.readString(loadavg).split(" ");
        return f[0] + " " + f[1] + " " + f[2];
    }
}

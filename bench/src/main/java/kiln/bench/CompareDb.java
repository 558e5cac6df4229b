package kiln.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code make bench-db BASELINE=REV}: the figures of {@link BenchDb} for this tree's kiln-db and for
 * the kiln-db of another revision, side by side in one run. Each round runs one {@code BenchDb
 * --one-round} per build, in a child JVM whose class path differs only in the database's jars
 * (kiln-db, and kiln-db-lmdb where the revision has it: LMDB was inside kiln-db before), the
 * order alternating between rounds (the host's speed drifts); every figure is a median over rounds
 * and each ratio the median of the per-round ratios (this tree / baseline).
 *
 * <p>Usage: {@code CompareDb BASELINE_LABEL BASELINE_DB_JARS CURRENT_DB_JARS ROUNDS}, each set of jars
 * a class path ({@code a.jar:b.jar}); the rest of the class path is this JVM's, less its kiln-db jars.
 */
public final class CompareDb {
    private CompareDb() {
    }

    public static void main(String[] args) throws Exception {
        String label = args[0];
        String baselineJars = args[1];
        String current = args[2];
        int rounds = Integer.parseInt(args[3]);
        List<String> shared = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            if (!entry.contains("kiln-db-")) shared.add(entry);  // kiln-db-0.1.0.jar, kiln-db-lmdb-0.1.0.jar
        }
        String[] names = {"this tree", label};
        String[] classPaths = {current, baselineJars};
        System.out.println("kiln bench-db, this tree against " + label + " side by side: " + rounds + " rounds of every point,"
            + " the order alternating; machine: " + Runtime.getRuntime().availableProcessors() + " CPUs (" + BenchDb.cpuModel()
            + "), load average at start " + BenchDb.loadAverage());
        List<Map<String, Double>> results0 = new ArrayList<>();
        List<Map<String, Double>> results1 = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int which = (r + k) % 2;
                System.err.printf("bench-db compare: round %d/%d, %s (~26 s)%n", r + 1, rounds, names[which]);
                Map<String, Double> m = round(classPaths[which] + java.io.File.pathSeparator + String.join(java.io.File.pathSeparator, shared));
                (which == 0 ? results0 : results1).add(m);
            }
        }
        String row = "  %-44s %14s %14s %8s   %s%n";
        System.out.printf(row, "", names[0], names[1], "ratio", "ratio per round");
        for (String key : results0.get(0).keySet()) {
            double[] a = new double[rounds];
            double[] b = new double[rounds];
            double[] ratio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                a[r] = results0.get(r).get(key);
                b[r] = results1.get(r).get(key);
                ratio[r] = a[r] / b[r];
            }
            StringBuilder per = new StringBuilder();
            for (double x : ratio) per.append(String.format("%.3f ", x));
            System.out.printf(row, key, BenchDb.ops(BenchDb.median(a)), BenchDb.ops(BenchDb.median(b)),
                String.format("%.3f", BenchDb.median(ratio)), per.toString().strip());
        }
    }

    /** @return the figures of one {@code BenchDb --one-round} on {@code classPath}, by name, in print order */
    private static Map<String, Double> round(String classPath) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(List.of("-cp", classPath, BenchDb.class.getName(), "--one-round"));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Map<String, Double> m = new LinkedHashMap<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                String[] f = line.split(" ");
                if (f[0].equals("READ")) {
                    m.put("point reads/s, " + f[1], Double.parseDouble(f[2]));
                } else if (f[0].equals("WRITE")) {
                    m.put("durable writes/s, group commit, " + f[1] + " in flight", Double.parseDouble(f[2]));
                    m.put("durable writes/s, maxBatch(1), " + f[1] + " in flight", Double.parseDouble(f[3]));
                }
            }
        }
        if (p.waitFor() != 0 || m.isEmpty()) throw new IOException("BenchDb --one-round failed (exit " + p.exitValue() + ")");
        return m;
    }
}

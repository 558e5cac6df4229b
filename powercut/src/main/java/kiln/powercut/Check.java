package kiln.powercut;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.DbException;
import kiln.db.Table;
import kiln.db.lmdb.LmdbEngine;

/**
 * What is checked after every cut, on the database reopened from what reached the disk:
 * <ul>
 *   <li>LMDB opens it and {@link Db#verify} reads every table in order with matching counts;</li>
 *   <li>every acknowledged operation is there: writer w's counter is at least its last acknowledged
 *       operation (the count of those below it is the figure "acknowledged writes lost");</li>
 *   <li>no operation is half-applied: writer w's rows are exactly those its first
 *       {@code counters[w]} operations leave, each with its value;</li>
 *   <li>the change feed numbers exactly one set per committed operation; its log holds the newest
 *       {@link PowerCutLoad#FEED_WINDOW} sets without a gap, and for every key those sets changed,
 *       the last change is what the rows table holds;</li>
 *   <li>nothing a feed reader was handed is missing from the log (published only once durable).</li>
 * </ul>
 */
final class Check {
    /** One check's findings; {@link #committed} holds each writer's counter, the new truth. */
    record Result(long lost, long[] committed, long lastSeq, List<String> problems) {
    }

    private Check() {
    }

    /**
     * Runs the checks in a process of its own, because a database that LMDB reads past the end of
     * its file (a power cut that kept a meta page but not the pages it points to) kills the
     * process with SIGBUS: that must be a finding, not the end of the run.
     *
     * <p>Usage: {@code Check DATA_DIR MAX_SEEN ACKED_0 ACKED_1 ...}; prints {@code PROBLEM text}
     * lines, then {@code RESULT lost lastSeq committed_0,committed_1,...}.
     */
    public static void main(String[] args) {
        long maxSeen = Long.parseLong(args[1]);
        long[] acked = new long[args.length - 2];
        for (int i = 0; i < acked.length; i++) acked[i] = Long.parseLong(args[i + 2]);
        Result r = after(Path.of(args[0]), acked, maxSeen);
        for (String p : r.problems()) System.out.println("PROBLEM " + p.replace('\n', ' '));
        StringBuilder committed = new StringBuilder();
        for (long c : r.committed()) committed.append(committed.length() == 0 ? "" : ",").append(c);
        System.out.println("RESULT " + r.lost() + " " + r.lastSeq() + " " + committed);
        System.out.flush();
        System.exit(0);
    }

    /** Runs {@link #main} in a child JVM; a process that dies without a result is reported as a crash. */
    static Result inChild(Path data, long[] acked, long maxSeen) throws java.io.IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(ChildJvm.command(Check.class));
        cmd.add(data.toString());
        cmd.add(Long.toString(maxSeen));
        for (long a : acked) cmd.add(Long.toString(a));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        List<String> problems = new ArrayList<>();
        List<String> other = new ArrayList<>();
        Result result = null;
        try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream(),
                java.nio.charset.StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.startsWith("PROBLEM ")) {
                    problems.add(line.substring(8));
                } else if (line.startsWith("RESULT ")) {
                    String[] f = line.split(" ");
                    long[] committed = new long[acked.length];
                    String[] c = f.length > 3 ? f[3].split(",") : new String[0];
                    for (int i = 0; i < c.length && i < committed.length; i++) committed[i] = Long.parseLong(c[i]);
                    result = new Result(Long.parseLong(f[1]), committed, Long.parseLong(f[2]), problems);
                } else if (line.contains("SIGBUS") || line.startsWith("# C  [") || line.startsWith("Exception")) {
                    other.add(line.replace('#', ' ').strip());
                }
            }
        }
        int exit = p.waitFor();
        if (result != null) return result;
        problems.add("the database does not open: the checking process died (exit " + exit + ")"
            + (other.isEmpty() ? "" : ": " + String.join(" ", other)));
        return new Result(0, new long[acked.length], 0, problems);
    }

    /**
     * @param acked   each writer's last acknowledged operation (0: none)
     * @param maxSeen the highest sequence number a feed reader printed
     */
    static Result after(Path data, long[] acked, long maxSeen) {
        List<String> problems = new ArrayList<>();
        long[] committed = new long[acked.length];
        long lost = 0;
        long lastSeq = 0;
        try (Db db = Db.builder(LmdbEngine.builder(data).maxMapSize(1L << 30).open()).open()) {
            try {
                db.verify();
            } catch (DbException e) {
                problems.add("verify: " + e.getMessage());
                return new Result(0, committed, 0, problems);
            }
            Table<Long, String> rows = db.table(PowerCutLoad.ROWS, Codec.LONG, Codec.STRING);
            Table<Integer, Long> counters = db.table(PowerCutLoad.COUNTERS, Codec.INT, Codec.LONG);
            ChangeFeed<Long, String> feed = db.changeFeed(rows, PowerCutLoad.FEED_WINDOW);
            Map<Long, String> table = new TreeMap<>();
            db.read(txn -> {
                for (int w = 0; w < acked.length; w++) committed[w] = counters.get(txn, w, 0L);
                rows.scan(txn, (k, v) -> {
                    table.put(k, v);
                    return true;
                });
                return null;
            }).join();
            long ops = 0;
            for (int w = 0; w < acked.length; w++) {
                if (committed[w] < acked[w]) lost += acked[w] - committed[w];
                ops += committed[w];
                String wrong = rowsOf(w, committed[w], table);
                if (wrong != null) problems.add("writer " + w + " at operation " + committed[w] + ": " + wrong);
            }
            lastSeq = feed.lastSeq();
            if (table.keySet().stream().anyMatch(k -> (int) (k >>> 40) >= acked.length)) problems.add("rows of an unknown writer");
            if (lastSeq != ops) problems.add("the feed numbers " + lastSeq + " sets for " + ops + " committed operations");
            if (maxSeen > lastSeq) problems.add("a feed reader was handed set " + maxSeen + ", but the log ends at " + lastSeq);
            String replay = replay(feed, table);
            if (replay != null) problems.add(replay);
        } catch (DbException e) {
            problems.add("the database does not open: " + e.getMessage());
        }
        return new Result(lost, committed, lastSeq, problems);
    }

    /** @return what differs between writer w's rows and what its first {@code c} operations leave, or null */
    private static String rowsOf(int w, long c, Map<Long, String> table) {
        long have = table.keySet().stream().filter(k -> (int) (k >>> 40) == w).count();
        long want = 0;
        for (long n = 1; n <= c; n++) {
            boolean deleted = n + 3 <= c && PowerCutLoad.deletes(n + 3);
            String v = table.get(PowerCutLoad.key(w, n));
            if (deleted) {
                if (v != null) return "row " + n + " should have been deleted by operation " + (n + 3);
            } else {
                want++;
                if (!PowerCutLoad.value(w, n).equals(v)) return "row " + n + " is " + (v == null ? "missing" : "wrong: " + v);
            }
        }
        return have == want ? null : have + " rows, " + want + " expected (a later operation half-applied?)";
    }

    /** @return what is wrong with the feed's log (a gap, or a last change that differs from the table), or null */
    private static String replay(ChangeFeed<Long, String> feed, Map<Long, String> table) {
        long last = feed.lastSeq();
        long oldest = Math.max(1, last - PowerCutLoad.FEED_WINDOW + 1);
        if (last > 0 && feed.oldestSeq() != oldest) return "the log starts at " + feed.oldestSeq() + ", not " + oldest;
        Map<Long, String> lastChange = new HashMap<>();
        long expect = oldest;
        while (expect <= last) {
            List<ChangeSet<Long, String>> sets = feed.read(expect - 1, 10_000);
            if (sets.isEmpty()) return "the log has no set " + expect + " (its newest is " + last + ")";
            for (ChangeSet<Long, String> set : sets) {
                if (set.seq() != expect) return "the log skips from " + (expect - 1) + " to " + set.seq();
                for (ChangeSet.Change<Long, String> c : set.changes()) lastChange.put(c.key(), c.value());
                expect++;
            }
        }
        for (Map.Entry<Long, String> e : lastChange.entrySet()) {
            String held = table.get(e.getKey());
            if (!java.util.Objects.equals(held, e.getValue())) {
                return "the log's last change of key " + e.getKey() + " is " + e.getValue() + ", the table holds " + held;
            }
        }
        return null;
    }
}

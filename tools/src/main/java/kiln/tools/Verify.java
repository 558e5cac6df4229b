package kiln.tools;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import kiln.db.Keys;
import kiln.db.KvCursor;
import kiln.db.KvEngine;
import kiln.db.KvSpace;
import kiln.db.KvTxn;

/**
 * {@code kiln db verify}: reads the whole database in one snapshot and checks what can be checked
 * without the app's code. Every space: the engine's own walk ({@link KvEngine#verify}: keys in
 * order, the count it records). Then kiln's structures, space by space: a feed log's sequence
 * numbers follow each other with no gap and each set reads; an expiry schedule names rows of its
 * table that expire exactly then, and every such row is scheduled; an expiring table's values carry
 * their expiry; an index's entries are pairs of byte strings with empty values, and its build state
 * is known; a sequence's value is 8 bytes; the settings hold the continuation secret and name
 * spaces that exist. (That an index holds exactly its table's rows needs the app's extractor:
 * {@code db.verify()} in the app checks it.)
 */
final class Verify {
    /** Problems reported per space, at most. */
    private static final int MAX_PER_SPACE = 10;

    private Verify() {
    }

    /** One space's outcome: what was found, and what is wrong (empty when nothing). */
    record Space(String name, Layout.Kind kind, long entries, String found, List<String> problems) {
    }

    static List<Space> run(KvEngine engine) {
        List<Space> out = new ArrayList<>();
        try (KvTxn txn = engine.beginRead()) {
            Layout layout = Layout.read(engine, txn);
            List<String> names = engine.spaceNames(txn);
            for (String name : names) {
                KvSpace space = engine.space(txn, name, false);
                Layout.Kind kind = layout.kind(name);
                Check c = new Check();
                long entries = -1;
                try {
                    entries = engine.verify(txn, space);
                } catch (RuntimeException e) {
                    c.problem("the engine's walk: " + e.getMessage());
                }
                String found;
                try {
                    found = switch (kind) {
                        case FEED_LOG -> feedLog(txn, names, name, space, c);
                        case EXPIRY_SCHEDULE -> schedule(engine, txn, layout, names, name, space, c);
                        case EXPIRING_TABLE -> expiringTable(engine, txn, names, name, space, c);
                        case INDEX -> index(txn, layout, name, space, c);
                        case SEQUENCES -> sequences(txn, space, c);
                        case SETTINGS -> settings(layout, names, c);
                        case TABLE, BACKUP_MARKS -> "";
                    };
                } catch (RuntimeException e) {
                    c.problem("cannot be read: " + e);
                    found = "";
                }
                out.add(new Space(name, kind, entries, found, c.problems()));
            }
        }
        return out;
    }

    /** A space's problems, {@value #MAX_PER_SPACE} at most and a count of the rest. */
    private static final class Check {
        private final List<String> problems = new ArrayList<>();
        private int more;

        void problem(String p) {
            if (problems.size() < MAX_PER_SPACE) problems.add(p);
            else more++;
        }

        List<String> problems() {
            if (more > 0) problems.add("and " + more + " more");
            return problems;
        }
    }

    private static String feedLog(KvTxn txn, List<String> names, String name, KvSpace space, Check c) {
        String table = Layout.tableOf(name);
        if (!names.contains(table)) c.problem("the feed's table '" + table + "' is missing");
        long first = 0;
        long previous = 0;
        long n = 0;
        try (KvCursor r = txn.range(space, null, null, false, 0)) {
            while (r.next()) {
                byte[] k = Keys.toArray(r.key());
                if (k.length != Long.BYTES) {
                    c.problem("key " + Literal.key(k) + " is no sequence number (8 bytes)");
                    continue;
                }
                long seq = ByteBuffer.wrap(k).getLong() ^ Long.MIN_VALUE;
                if (n == 0) first = seq;
                else if (seq != previous + 1) c.problem("sequence " + seq + " follows " + previous + ": a gap");
                if (Render.changeSet(Keys.toArray(r.value())) == null) c.problem("change set " + seq + " does not read as one");
                previous = seq;
                n++;
            }
        }
        return n == 0 ? "no change set" : "change sets " + first + ".." + previous + " in sequence";
    }

    private static String schedule(KvEngine engine, KvTxn txn, Layout layout, List<String> names, String name, KvSpace space, Check c) {
        String table = Layout.tableOf(name);
        if (!names.contains(table)) {
            c.problem("the schedule's table '" + table + "' is missing");
            return "";
        }
        if (!layout.isExpiring(table)) c.problem("table '" + table + "' has a schedule but is not marked expiring in " + Layout.META);
        KvSpace rows = engine.space(txn, table, false);
        long n = 0;
        try (KvCursor r = txn.range(space, null, null, false, 0)) {
            while (r.next()) {
                n++;
                byte[] k = Keys.toArray(r.key());
                if (r.value().remaining() != 0) c.problem("entry " + Literal.hex(k) + " has a value");
                if (k.length <= Long.BYTES) {
                    c.problem("entry " + Literal.hex(k) + " is not (expiry, row key)");
                    continue;
                }
                long at = ByteBuffer.wrap(k).getLong();
                byte[] row = Arrays.copyOfRange(k, Long.BYTES, k.length);
                ByteBuffer v = txn.get(rows, direct(row));
                if (v == null) c.problem("row " + Literal.key(row) + " is scheduled at " + Render.micros(at) + " but is not in '" + table + "'");
                else if (v.remaining() < Long.BYTES || v.getLong(v.position()) != at) {
                    c.problem("row " + Literal.key(row) + " is scheduled at " + Render.micros(at) + " but expires at another time");
                }
            }
        }
        return Layout.plural(n, "expiry") + " checked against " + table;
    }

    private static String expiringTable(KvEngine engine, KvTxn txn, List<String> names, String name, KvSpace space, Check c) {
        String schedule = Layout.EXPIRY_PREFIX + name;
        if (!names.contains(schedule)) {
            c.problem("its schedule '" + schedule + "' is missing");
            return "";
        }
        KvSpace scheduled = engine.space(txn, schedule, false);
        long dated = 0;
        try (KvCursor r = txn.range(space, null, null, false, 0)) {
            while (r.next()) {
                ByteBuffer v = r.value();
                byte[] k = Keys.toArray(r.key());
                if (v.remaining() < Long.BYTES) {
                    c.problem("row " + Literal.key(k) + " has no expiry (its value is " + v.remaining() + " bytes)");
                    continue;
                }
                long at = v.getLong(v.position());
                if (at == 0) continue;
                dated++;
                ByteBuffer entry = ByteBuffer.allocateDirect(Long.BYTES + k.length).putLong(at).put(k).flip();
                if (txn.get(scheduled, entry) == null) {
                    c.problem("row " + Literal.key(k) + " expires at " + Render.micros(at) + " but is not in " + schedule);
                }
            }
        }
        return Layout.plural(dated, "row") + " with an expiry checked against " + schedule;
    }

    private static String index(KvTxn txn, Layout layout, String name, KvSpace space, Check c) {
        long n = 0;
        try (KvCursor r = txn.range(space, null, null, false, 0)) {
            while (r.next()) {
                n++;
                byte[] k = Keys.toArray(r.key());
                if (Render.indexEntry(k) == null) c.problem("entry " + Literal.key(k) + " is not (index key, row key) as byte strings");
                if (r.value().remaining() != 0) c.problem("entry " + Literal.key(k) + " has a value");
            }
        }
        String state = layout.indexState(name);
        if (!state.equals("built") && !state.startsWith("building")) c.problem("its build state is " + state);
        return Layout.plural(n, "entry") + " (index key, row key); " + state;
    }

    private static String sequences(KvTxn txn, KvSpace space, Check c) {
        long n = 0;
        try (KvCursor r = txn.range(space, null, null, false, 0)) {
            while (r.next()) {
                n++;
                if (r.value().remaining() != Long.BYTES) c.problem("sequence " + Literal.key(Keys.toArray(r.key())) + "'s value is not 8 bytes");
            }
        }
        return Layout.plural(n, "sequence");
    }

    private static String settings(Layout layout, List<String> names, Check c) {
        if (!layout.hasSecret()) c.problem("no " + Layout.SECRET + " (the first open of a database makes it)");
        for (String index : layout.indexes()) {
            if (!names.contains(index)) c.problem("index '" + index + "' has a build state but no space");
        }
        for (String table : layout.expiringTables()) {
            if (!names.contains(table)) c.problem("expiring table '" + table + "' is marked but has no space");
        }
        return layout.aboutSettings();
    }

    /** @return {@code b} in a direct buffer (LMDB reads keys from native memory) */
    private static ByteBuffer direct(byte[] b) {
        return ByteBuffer.allocateDirect(b.length).put(b).flip();
    }

    /** @return the report's lines and the count of problems */
    static int print(java.io.PrintStream out, String where, List<Space> spaces) {
        out.println("verifying " + where + " (read-only, one snapshot)");
        int width = 5;
        for (Space s : spaces) width = Math.max(width, s.name().length());
        int problems = 0;
        long entries = 0;
        for (Space s : spaces) {
            String found = (s.entries() >= 0 ? Layout.plural(s.entries(), "entry") + " in order" : "") + (s.found().isEmpty() ? "" : "; " + s.found());
            out.printf(Locale.ROOT, "%-" + width + "s  %s  %s%n", s.name(), s.problems().isEmpty() ? "ok     " : "PROBLEM", found);
            for (String p : s.problems()) out.printf(Locale.ROOT, "%-" + width + "s    - %s%n", "", p);
            problems += s.problems().size();
            entries += Math.max(0, s.entries());
        }
        out.printf(Locale.ROOT, "%s, %s: %s%n", Layout.plural(spaces.size(), "space"), Layout.plural(entries, "entry"),
            problems == 0 ? "no problem found" : Layout.plural(problems, "problem"));
        return problems;
    }
}

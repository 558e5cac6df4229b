package kiln.tools;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import kiln.db.Keys;
import kiln.db.KvCursor;
import kiln.db.KvEngine;
import kiln.db.KvSpace;
import kiln.db.KvStats;
import kiln.db.KvTxn;

/**
 * {@code kiln db stat}: the database in one snapshot, space by space (mdb_stat's role): its kind,
 * entries, bytes of keys and values (read entry by entry: the same figure on every engine), and what
 * kiln's marks say of it: an index's build state, a feed's sequence numbers and last commit, an
 * expiring table's next expiry, the sequences' values; then the engine's map use where it has one.
 */
final class Stat {
    private Stat() {
    }

    /** One space's line. */
    record Row(String space, Layout.Kind kind, long entries, long bytes, String about) {
    }

    static List<Row> rows(KvEngine engine) {
        List<Row> rows = new ArrayList<>();
        try (KvTxn txn = engine.beginRead()) {
            Layout layout = Layout.read(engine, txn);
            List<String> names = engine.spaceNames(txn);
            for (String name : names) {
                KvSpace space = engine.space(txn, name, false);
                Layout.Kind kind = layout.kind(name);
                long entries = txn.count(space);
                long bytes = 0;
                try (KvCursor c = txn.range(space, null, null, false, 0)) {
                    while (c.next()) bytes += c.key().remaining() + c.value().remaining();
                }
                rows.add(new Row(name, kind, entries, bytes, about(engine, txn, layout, names, name, kind, space)));
            }
        }
        return rows;
    }

    private static String about(KvEngine engine, KvTxn txn, Layout layout, List<String> names, String name, Layout.Kind kind, KvSpace space) {
        return switch (kind) {
            case SETTINGS -> layout.aboutSettings();
            case INDEX -> layout.indexState(name);
            case FEED_LOG -> {
                byte[][] ends = ends(txn, space);
                String of = "feed of " + Layout.tableOf(name);
                if (ends == null) yield of + ": no change set yet";
                long first = seq(ends[0]);
                long last = seq(ends[1]);
                var set = Render.changeSet(ends[2]);
                yield of + ": last sequence " + last + " (kept " + first + ".." + last + ")"
                    + (set == null ? "" : ", committed " + set.path("committedAt").asText());
            }
            case EXPIRY_SCHEDULE -> {
                byte[][] ends = ends(txn, space);
                String of = "expiries of " + Layout.tableOf(name);
                yield ends == null ? of + ": none due" : of + ": next " + Render.micros(ByteBuffer.wrap(ends[0]).getLong());
            }
            case EXPIRING_TABLE, TABLE -> {
                List<String> notes = new ArrayList<>();
                if (kind == Layout.Kind.EXPIRING_TABLE) notes.add("rows expire (" + Layout.EXPIRY_PREFIX + name + ")");
                if (names.contains(Layout.FEED_PREFIX + name)) notes.add("fed (" + Layout.FEED_PREFIX + name + ")");
                yield String.join("; ", notes);
            }
            case SEQUENCES -> {
                List<String> values = new ArrayList<>();
                try (KvCursor c = txn.range(space, null, null, false, 0)) {
                    while (c.next() && values.size() < 6) {
                        if (values.size() == 5) {
                            values.add("...");
                            break;
                        }
                        values.add(Literal.key(Keys.toArray(c.key())) + " = " + (c.value().remaining() == 8 ? seq(Keys.toArray(c.value()))
                            : Literal.value(Keys.toArray(c.value()))));
                    }
                }
                yield String.join(", ", values);
            }
            case BACKUP_MARKS -> "written by --backup";
        };
    }

    /** @return the first key, the last key and the last value of {@code space}; null when it is empty */
    private static byte[][] ends(KvTxn txn, KvSpace space) {
        byte[] first;
        try (KvCursor c = txn.range(space, null, null, false, 1)) {
            if (!c.next()) return null;
            first = Keys.toArray(c.key());
        }
        try (KvCursor c = txn.range(space, null, null, true, 1)) {
            c.next();
            return new byte[][] {first, Keys.toArray(c.key()), Keys.toArray(c.value())};
        }
    }

    /** @return a {@code Codec.LONG} key's number (a feed's sequence, a sequence's value) */
    private static long seq(byte[] k) {
        return k.length == Long.BYTES ? ByteBuffer.wrap(k).getLong() ^ Long.MIN_VALUE : -1;
    }

    static void print(PrintStream out, String engineName, KvEngine engine, List<Row> rows) {
        out.println(describe(engineName, engine));
        int width = "space".length();
        for (Row r : rows) width = Math.max(width, r.space().length());
        String format = "%-" + width + "s  %-15s  %,10d  %,12d  %s";
        out.printf(Locale.ROOT, "%-" + width + "s  %-15s  %10s  %12s  %s%n", "space", "kind", "entries", "bytes", "about");
        long entries = 0;
        long bytes = 0;
        for (Row r : rows) {
            out.println(String.format(Locale.ROOT, format, r.space(), r.kind().word, r.entries(), r.bytes(), r.about()).stripTrailing());
            entries += r.entries();
            bytes += r.bytes();
        }
        out.printf(Locale.ROOT, "%s, %s, %s of keys and values%n", Layout.plural(rows.size(), "space"), Layout.plural(entries, "entry"),
            bytes(bytes));
    }

    /** @return the engine's line: where, and its map's use where it has a map */
    private static String describe(String engineName, KvEngine engine) {
        KvStats s = engine.stats();
        String where = engineName + " " + Layout.where(engine) + " (read-only)";
        if (s.mapSize() <= 0) return where;
        return where + ": map " + bytes(s.usedBytes()) + " used of " + bytes(s.mapSize())
            + String.format(Locale.ROOT, " (%.2f %%)", 100.0 * s.usedBytes() / s.mapSize());
    }

    /** @return bytes as B, KiB, MiB, GiB or TiB with one decimal */
    static String bytes(long n) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
        double v = n;
        int u = 0;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return u == 0 ? n + " B" : String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }
}

package kiln.tools;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import kiln.db.Keys;
import kiln.db.KvCursor;
import kiln.db.KvEngine;
import kiln.db.KvSpace;
import kiln.db.KvTxn;

/**
 * What each key space of a kiln database is, from its name and from kiln's own settings table,
 * without the app's code: kiln's layers name their spaces and keep a few marks (db/'s
 * {@code Catalog}, {@code ChangeFeed}, {@code Table}, {@code OnlineIndexer}, {@code Sequence}).
 *
 * <ul>
 *   <li>{@value #META}: the settings: the continuation secret, {@code expiring:T} for an expiring
 *       table T, {@code index:I} for index I's build state (0: built; 1 and the last row key done:
 *       building)</li>
 *   <li>{@code kiln.changes.T}: table T's change feed log, change sets by sequence number</li>
 *   <li>{@code kiln.expiry.T}: expiring table T's schedule, keys (expiry, row key)</li>
 *   <li>{@value #SEQUENCES}: every sequence's last value; {@value #BACKUP_MARKS}: backups' marks</li>
 *   <li>any other space: a table (expiring when marked so), or an index when it has a build state</li>
 * </ul>
 */
final class Layout {
    static final String META = "kiln.meta";
    static final String SEQUENCES = "kiln.sequences";
    static final String BACKUP_MARKS = "kiln.backups";
    static final String FEED_PREFIX = "kiln.changes.";
    static final String EXPIRY_PREFIX = "kiln.expiry.";
    static final String SECRET = "continuation-secret";
    private static final String INDEX_MARK = "index:";
    private static final String EXPIRING_MARK = "expiring:";

    /** A space's kind, as {@code stat} names it. */
    enum Kind {
        TABLE("table"), EXPIRING_TABLE("expiring table"), INDEX("index"), FEED_LOG("feed log"), EXPIRY_SCHEDULE("expiry schedule"),
        SEQUENCES("sequences"), SETTINGS("settings"), BACKUP_MARKS("backup marks");

        final String word;

        Kind(String word) {
            this.word = word;
        }
    }

    private final Map<String, byte[]> indexStates = new HashMap<>();
    private final Set<String> expiring = new HashSet<>();
    private final boolean hasSecret;

    private Layout(Map<String, byte[]> meta) {
        for (Map.Entry<String, byte[]> e : meta.entrySet()) {
            if (e.getKey().startsWith(INDEX_MARK)) indexStates.put(e.getKey().substring(INDEX_MARK.length()), e.getValue());
            else if (e.getKey().startsWith(EXPIRING_MARK)) expiring.add(e.getKey().substring(EXPIRING_MARK.length()));
        }
        this.hasSecret = meta.containsKey(SECRET);
    }

    /** Reads {@value #META} in {@code txn} (an empty layout when the database has none). */
    static Layout read(KvEngine engine, KvTxn txn) {
        Map<String, byte[]> meta = new HashMap<>();
        KvSpace space = engine.space(txn, META, false);
        if (space != null) {
            try (KvCursor c = txn.range(space, null, null, false, 0)) {
                while (c.next()) meta.put(StandardCharsets.UTF_8.decode(c.key()).toString(), Keys.toArray(c.value()));
            }
        }
        return new Layout(meta);
    }

    Kind kind(String space) {
        if (space.equals(META)) return Kind.SETTINGS;
        if (space.equals(SEQUENCES)) return Kind.SEQUENCES;
        if (space.equals(BACKUP_MARKS)) return Kind.BACKUP_MARKS;
        if (space.startsWith(FEED_PREFIX)) return Kind.FEED_LOG;
        if (space.startsWith(EXPIRY_PREFIX)) return Kind.EXPIRY_SCHEDULE;
        if (indexStates.containsKey(space)) return Kind.INDEX;
        if (expiring.contains(space)) return Kind.EXPIRING_TABLE;
        return Kind.TABLE;
    }

    /** @return the table a feed log or an expiry schedule belongs to; null for other kinds */
    static String tableOf(String space) {
        if (space.startsWith(FEED_PREFIX)) return space.substring(FEED_PREFIX.length());
        if (space.startsWith(EXPIRY_PREFIX)) return space.substring(EXPIRY_PREFIX.length());
        return null;
    }

    /** @return an index's build state in words: {@code built}, {@code building, after row K}, {@code not begun} */
    String indexState(String index) {
        byte[] state = indexStates.get(index);
        if (state == null) return "not begun";
        if (Arrays.equals(state, new byte[] {0})) return "built";
        if (state.length > 0 && state[0] == 1) return "building, after row " + Literal.key(Arrays.copyOfRange(state, 1, state.length));
        return "unknown build state " + Literal.hex(state);
    }

    boolean isExpiring(String table) {
        return expiring.contains(table);
    }

    /** @return the names of the indexes with a build state */
    Set<String> indexes() {
        return indexStates.keySet();
    }

    /** @return the tables marked expiring */
    Set<String> expiringTables() {
        return expiring;
    }

    boolean hasSecret() {
        return hasSecret;
    }

    /** @return what {@code stat} says of the settings table */
    String aboutSettings() {
        return (hasSecret ? "continuation secret; " : "no continuation secret; ") + plural(indexStates.size(), "index state") + "; "
            + plural(expiring.size(), "expiring table");
    }

    static String plural(long n, String noun) {
        String many = noun.endsWith("y") ? noun.substring(0, noun.length() - 1) + "ies" : noun.endsWith("x") ? noun + "es" : noun + "s";
        return String.format(java.util.Locale.ROOT, "%,d", n) + " " + (n == 1 ? noun : many);
    }

    /** @return the spaces in {@code names} a dump holds in the order of {@code names}, or all of them */
    static List<String> only(List<String> names, List<String> wanted) {
        if (wanted == null || wanted.isEmpty()) return names;
        for (String w : wanted) {
            if (!names.contains(w)) throw new ToolException("no space '" + w + "'; there are: " + String.join(", ", names));
        }
        return names.stream().filter(wanted::contains).toList();
    }

    /** @return the engine's location for messages, without the session name {@code DbTool.named} gave it */
    static String where(KvEngine engine) {
        return engine.location().replaceAll("ApplicationName=kiln-db[^&]*&?", "").replaceAll("[?&]$", "");
    }
}

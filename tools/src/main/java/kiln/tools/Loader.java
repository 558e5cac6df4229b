package kiln.tools;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import kiln.db.Keys;
import kiln.db.KvCursor;
import kiln.db.KvEngine;
import kiln.db.KvSpace;
import kiln.db.KvTxn;

/**
 * Writes a dump into an engine ({@code load}, {@code copy}): each space created where missing and
 * filled in write transactions of at most {@link #batchEntries} entries and {@link #batchBytes}
 * bytes (each a durable commit), then every space read back from the target and checked against the
 * dump's counts and digests.
 *
 * <p>Before it writes anything it refuses a target that others may be using
 * ({@link KvEngine#otherClients}: over PostgreSQL, other sessions on the database; an LMDB directory
 * a server has open was refused when the engine opened) and a target that holds entries: the
 * database a server has opened holds at least its settings. Told to {@link #replace}, it empties
 * the dump's spaces in the target first instead, and leaves the target's other spaces as they are
 * (named in the report).
 */
final class Loader implements Dump.Sink {
    /** Entries per write transaction, by default. */
    static final int BATCH_ENTRIES = 10_000;
    /** Key and value bytes per write transaction, at most (one entry larger than this is a batch of its own). */
    static final int BATCH_BYTES = 4 << 20;

    private final KvEngine target;
    private final boolean replace;
    private final int batchEntries;
    private final Progress progress;
    private final long batchBytes = BATCH_BYTES;
    private final Map<String, Long> loaded = new LinkedHashMap<>();
    private final Map<String, byte[]> digests = new LinkedHashMap<>();
    private final List<String> leftAlone = new ArrayList<>();
    private final List<String> emptied = new ArrayList<>();
    private ByteBuffer key = ByteBuffer.allocateDirect(512);
    private KvTxn txn;
    private KvSpace space;
    private String spaceName;
    private long expected;
    private long inSpace;
    private int inBatch;
    private long bytesInBatch;
    /** The spaces the dump holds, from its header. */
    private int spaces;

    Loader(KvEngine target, boolean replace, int batchEntries, Progress progress) {
        this.target = target;
        this.replace = replace;
        this.batchEntries = batchEntries;
        this.progress = progress;
    }

    @Override
    public void begin(Dump.Header header) {
        spaces = header.spaces().size();
        List<String> others = target.otherClients();
        if (!others.isEmpty()) {
            throw new ToolException(Layout.where(target) + " has other clients (" + summary(others) + "): a kiln server may be"
                + " using it, and a load must not write behind a server's back; stop them, then load");
        }
        Map<String, Long> holding = new LinkedHashMap<>();
        try (KvTxn read = target.beginRead()) {
            for (String name : target.spaceNames(read)) {
                long n = read.count(target.space(read, name, false));
                if (n > 0) holding.put(name, n);
            }
        }
        if (holding.isEmpty()) return;
        if (!replace) {
            throw new ToolException(Layout.where(target) + " holds data already (" + describe(holding) + "): load into an empty database,"
                + " or give --replace to empty the dump's spaces there first");
        }
        Set<String> dumped = new HashSet<>(header.spaces());
        for (Map.Entry<String, Long> e : holding.entrySet()) {
            if (dumped.contains(e.getKey())) {
                empty(e.getKey());
                emptied.add(e.getKey());
            } else {
                leftAlone.add(e.getKey());
            }
        }
    }

    /** @return {@code others} counted by who they are: "11 sessions of user kiln ('kiln-a'), 1 session of user ops" */
    static String summary(List<String> others) {
        Map<String, Integer> byWho = new LinkedHashMap<>();
        for (String o : others) byWho.merge(o.replaceFirst("^session [0-9]+ ", ""), 1, Integer::sum);
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, Integer> e : byWho.entrySet()) {
            parts.add(e.getKey().startsWith("of ") ? Layout.plural(e.getValue(), "session") + " " + e.getKey()
                : e.getValue() > 1 ? e.getValue() + " × " + e.getKey() : e.getKey());
        }
        return String.join(", ", parts);
    }

    private static String describe(Map<String, Long> counts) {
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, Long> e : counts.entrySet()) {
            if (parts.size() == 5) {
                parts.add("and " + (counts.size() - 5) + " more");
                break;
            }
            parts.add(e.getKey() + ": " + Layout.plural(e.getValue(), "entry"));
        }
        return String.join(", ", parts);
    }

    /** Deletes every entry of {@code name} in the target, a batch per write transaction. */
    private void empty(String name) {
        while (true) {
            try (KvTxn w = target.beginWrite()) {
                KvSpace s = target.space(w, name, false);
                List<byte[]> keys = new ArrayList<>();
                try (KvCursor c = w.range(s, null, null, false, batchEntries)) {
                    while (keys.size() < batchEntries && c.next()) keys.add(Keys.toArray(c.key()));
                }
                if (keys.isEmpty()) return;
                for (byte[] k : keys) w.delete(s, direct(ByteBuffer.wrap(k)));
                w.commit();
            }
        }
    }

    @Override
    public void space(String name, long expected) {
        commit();
        this.spaceName = name;
        this.expected = expected;
        this.inSpace = 0;
        txn = target.beginWrite();
        try {
            space = target.space(txn, name, true);
        } catch (RuntimeException e) {
            txn.close();
            txn = null;
            String hint = e.getClass().getSimpleName().contains("DbFull")
                ? " (LMDB's maxTables, 32 by default, is too small for the dump's " + spaces + " spaces: give lmdb:DIR?maxTables=N with N at"
                + " least " + spaces + " here, and the servers the same --db lmdb:DIR?maxTables=N)" : "";
            throw new ToolException("cannot make space '" + name + "' in " + Layout.where(target) + ": " + e.getMessage() + hint, e);
        }
    }

    @Override
    public void entry(ByteBuffer k, ByteBuffer v) {
        if (txn == null) txn = target.beginWrite();
        ByteBuffer room = txn.reserve(space, direct(k), v.remaining());
        room.put(v.duplicate());
        inSpace++;
        inBatch++;
        bytesInBatch += k.remaining() + v.remaining();
        if (inBatch >= batchEntries || bytesInBatch >= batchBytes) {
            commit();
            progress.entries(spaceName, inSpace, expected);
        }
    }

    /** @return {@code k} copied into a direct buffer (LMDB takes keys from native memory only) */
    private ByteBuffer direct(ByteBuffer k) {
        if (key.capacity() < k.remaining()) key = ByteBuffer.allocateDirect(k.remaining());
        return key.clear().put(k.duplicate()).flip();
    }

    @Override
    public void end(String name, long entries, byte[] sha256) {
        commit();
        loaded.put(name, entries);
        digests.put(name, sha256);
        progress.spaceDone(name, entries);
    }

    /** Commits the batch open, if any. */
    private void commit() {
        if (txn == null) return;
        try {
            txn.commit();
        } catch (KvTxn.TooLarge e) {
            throw new ToolException("the load does not fit in " + Layout.where(target) + ": " + e.getMessage(), e);
        } finally {
            txn.close();
            txn = null;
            inBatch = 0;
            bytesInBatch = 0;
        }
    }

    @Override
    public void finish(long spaces, long entries) {
        commit();
        readBack();
    }

    /**
     * Reads every loaded space back from the target in one snapshot and checks its count and digest.
     *
     * @throws ToolException naming the first space that differs
     */
    private void readBack() {
        try (KvTxn read = target.beginRead()) {
            for (Map.Entry<String, byte[]> e : digests.entrySet()) {
                Dump.Digest d = new Dump.Digest();
                try (KvCursor c = read.range(target.space(read, e.getKey(), false), null, null, false, 0)) {
                    while (c.next()) d.add(c.key(), c.value());
                }
                if (d.entries() != loaded.get(e.getKey()) || !MessageDigest.isEqual(d.sha256(), e.getValue())) {
                    throw new ToolException("space '" + e.getKey() + "' in " + Layout.where(target) + " reads back " + d.entries()
                        + " entries that differ from the " + loaded.get(e.getKey()) + " loaded: another process wrote it meanwhile?");
                }
            }
        }
    }

    /** Closes what a failed load left open (its last batch is not committed). */
    void abandon() {
        if (txn != null) {
            txn.close();
            txn = null;
        }
    }

    /** @return each loaded space's entries, in the dump's order */
    Map<String, Long> loaded() {
        return loaded;
    }

    /** @return the target's spaces that held entries, were not in the dump and were left as they were ({@link #replace}) */
    List<String> leftAlone() {
        return leftAlone;
    }

    /** @return the target's spaces emptied before the load ({@link #replace}) */
    List<String> emptied() {
        return emptied;
    }
}

package kiln.db;

import java.util.Arrays;
import java.util.concurrent.CompletionException;
import java.util.logging.Logger;

/**
 * Switches a declared {@link Index} on and builds it over the rows its table already has, online:
 * {@link Index#BUILD_BATCH} rows per write, other writes taking turns with the build's, and the
 * place it reached kept in the database's own table ({@value Catalog#META}) so that a restart goes on
 * from there (the FoundationDB Record Layer's {@code OnlineIndexer}, by the same name).
 */
final class OnlineIndexer {
    /** The build state of an index that holds every row. */
    private static final byte[] BUILT = {0};
    /** The first byte of the build state of an index being built; the last row key done follows. */
    private static final byte BUILDING = 1;
    private static final Logger LOG = Logger.getLogger(OnlineIndexer.class.getName());

    private final Writer writer;
    private final Reads reads;
    private final Table<String, byte[]> meta;

    OnlineIndexer(Writer writer, Reads reads, Table<String, byte[]> meta) {
        this.writer = writer;
        this.reads = reads;
        this.meta = meta;
    }

    /**
     * The {@value Catalog#META} key of an index's build state: absent (not begun), {@link #BUILT}, or
     * {@link #BUILDING} followed by the last row key done.
     */
    private static String buildStateKey(String index) {
        return "index:" + index;
    }

    /**
     * On the writer thread, between two write queries, makes {@code table} keep the index of {@code maintainer} in
     * every write after this one (waiting for that write); then marks it built when the table is
     * empty or the build was done before, else starts or resumes the build, which goes on in the
     * background ({@link Index#ready}).
     */
    <I, K, V> void start(Table<K, V> table, IndexMaintainer<I, K, V> maintainer) {
        Index<I, K, V> index = maintainer.index;
        String name = index.name();
        byte[] state = writer.write(txn -> {
            table.index(maintainer);
            byte[] now = meta.get(txn, buildStateKey(name));
            if (now == null) {
                try (KvCursor rows = txn.kv.range(table.space, null, null, false, 1)) {  // expired rows count: they have entries
                    if (!rows.next()) {
                        now = BUILT;  // an empty table's index holds every row already
                        meta.put(txn, buildStateKey(name), now);
                    }
                }
            }
            return now;
        }).join();
        if (state != null && Arrays.equals(state, BUILT)) {
            index.built();
            return;
        }
        long rows = reads.read(txn -> txn.kv.count(table.space)).join();
        LOG.info(() -> "building index '" + name + "' of '" + table.name() + "' (" + rows + " rows, " + Index.BUILD_BATCH
            + " per write" + (state == null ? "" : ", going on from where it stopped") + ")");
        step(maintainer, state == null ? null : Arrays.copyOfRange(state, 1, state.length), System.nanoTime());
    }

    /**
     * Adds the entries of the next {@link Index#BUILD_BATCH} rows in one write, and from its
     * callback (on the writer thread, after the commit) queues the next, until the table has no more.
     */
    private void step(IndexMaintainer<?, ?, ?> maintainer, byte[] after, long started) {
        Index<?, ?, ?> index = maintainer.index;
        String key = buildStateKey(index.name());
        writer.write(txn -> {
            byte[] last = maintainer.build(txn, after, Index.BUILD_BATCH);
            if (last == null) {
                meta.put(txn, key, BUILT);
            } else {
                byte[] building = new byte[1 + last.length];
                building[0] = BUILDING;
                System.arraycopy(last, 0, building, 1, last.length);
                meta.put(txn, key, building);
            }
            return last;
        }).whenComplete((last, failed) -> {
            if (failed != null) {
                Throwable why = failed instanceof CompletionException && failed.getCause() != null ? failed.getCause() : failed;
                LOG.warning("index '" + index.name() + "' could not be built: " + why);
                index.buildFailed(why);
            } else if (last == null) {
                LOG.info(() -> "index '" + index.name() + "' is built, in " + (System.nanoTime() - started) / 1_000_000 + " ms");
                index.built();
            } else {
                step(maintainer, last, started);
            }
        });
    }
}

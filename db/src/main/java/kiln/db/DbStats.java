package kiln.db;

/**
 * A snapshot of the database's counters since it was opened. (A plain class from the days of the
 * stock Kilim weaver, which could not read records; kiln's weaver, kilim-weaver/, can.)
 */
public final class DbStats {
    /** Durable write transactions committed (one fsync each). */
    public final long commits;
    /** Write queries finished: committed or rolled back alone. */
    public final long writes;
    /** Write queries that threw and were rolled back alone. */
    public final long failedWrites;
    /** Largest number of writes committed in one transaction. */
    public final long largestBatch;
    /** The memory map's size in bytes: the most the database may hold (the engine's ceiling: LMDB's maxMapSize). */
    public final long mapSize;
    /** Writes waiting for the writer thread right now. */
    public final int queued;
    /** Writes in committed batches (rolled-back ones included): the sum of the batch sizes of {@link #commits}. */
    public final long batchedWrites;
    /**
     * Bytes of the memory map in use: up to the last page the last commit used (LMDB's last page
     * number, {@code mdb_env_info}); pages freed below it are reused, so it never shrinks.
     */
    public final long usedBytes;
    /** Read transactions running a query now. */
    public final int readTxnsInUse;
    /** Read transactions kept open (reset) for the next reads; each holds a reader slot as one in use does. */
    public final int readTxnsPooled;
    /** Reader slots this process may hold, in use and pooled together (LMDB's maxReaders less those left to other processes). */
    public final int readSlots;
    /**
     * Runs of a batch of writes that conflicted with another process's writes over a shared engine
     * (PostgreSQL's serialization failures, {@link KvTxn.Conflict}) and were run again or failed; 0 on LMDB.
     */
    public final long conflicts;
    /** Buckets of {@link #commitsByBatchSize}: batch sizes 1, 2, 3..4, 5..8, ..., up to 2^31. */
    static final int BATCH_SIZE_BUCKETS = 32;
    private final long[] commitsByBatchSize;

    DbStats(long commits, long writes, long failedWrites, long largestBatch, long mapSize, int queued,
            long[] commitsByBatchSize, long batchedWrites, long usedBytes, int readTxnsInUse, int readTxnsPooled, int readSlots,
            long conflicts) {
        this.commits = commits;
        this.writes = writes;
        this.failedWrites = failedWrites;
        this.largestBatch = largestBatch;
        this.mapSize = mapSize;
        this.queued = queued;
        this.commitsByBatchSize = commitsByBatchSize;
        this.batchedWrites = batchedWrites;
        this.usedBytes = usedBytes;
        this.readTxnsInUse = readTxnsInUse;
        this.readTxnsPooled = readTxnsPooled;
        this.readSlots = readSlots;
        this.conflicts = conflicts;
    }

    /**
     * Commits by the number of writes in their batch, in power-of-two buckets: element 0 counts
     * commits of one write, element i (1..31) commits of 2^(i-1)+1 to 2^i writes. For a histogram
     * of batch sizes ({@link #batchSizeUpperBound}); the counts add up to {@link #commits}.
     *
     * @return a copy, {@value #BATCH_SIZE_BUCKETS} counts
     */
    public long[] commitsByBatchSize() {
        return commitsByBatchSize.clone();
    }

    /** @return the largest batch size counted in element {@code bucket} of {@link #commitsByBatchSize}: 2^bucket */
    public static long batchSizeUpperBound(int bucket) {
        return 1L << bucket;
    }

    /** @return the element of {@link #commitsByBatchSize} that counts a commit of {@code size} (>= 1) writes */
    static int batchSizeBucket(int size) {
        return size <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(size - 1);
    }

    @Override
    public String toString() {
        return "DbStats{commits=" + commits + ", writes=" + writes + ", failedWrites=" + failedWrites
            + ", largestBatch=" + largestBatch + ", mapSize=" + mapSize + ", queued=" + queued + ", batchedWrites=" + batchedWrites
            + ", usedBytes=" + usedBytes + ", readTxnsInUse=" + readTxnsInUse + ", readTxnsPooled=" + readTxnsPooled
            + ", readSlots=" + readSlots + ", conflicts=" + conflicts + '}';
    }
}

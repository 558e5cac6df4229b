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
    /** Times the memory map was grown (each re-ran one batch). */
    public final long mapGrowths;
    /** Current memory-map size in bytes. */
    public final long mapSize;
    /** Writes waiting for the writer thread right now. */
    public final int queued;

    DbStats(long commits, long writes, long failedWrites, long largestBatch, long mapGrowths, long mapSize, int queued) {
        this.commits = commits;
        this.writes = writes;
        this.failedWrites = failedWrites;
        this.largestBatch = largestBatch;
        this.mapGrowths = mapGrowths;
        this.mapSize = mapSize;
        this.queued = queued;
    }

    @Override
    public String toString() {
        return "DbStats{commits=" + commits + ", writes=" + writes + ", failedWrites=" + failedWrites
            + ", largestBatch=" + largestBatch + ", mapGrowths=" + mapGrowths + ", mapSize=" + mapSize
            + ", queued=" + queued + '}';
    }
}

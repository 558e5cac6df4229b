package kiln.db;

/**
 * A {@link KvEngine}'s counters, for {@link DbStats}; zero where an engine has no such thing.
 *
 * @param mapSize        the most the engine may hold, bytes
 * @param usedBytes      bytes in use up to the last page written
 * @param readTxnsInUse  read transactions running a query now
 * @param readTxnsPooled read transactions kept open for the next reads
 * @param readSlots      read transactions the engine allows at once, in use and pooled
 */
public record KvStats(long mapSize, long usedBytes, int readTxnsInUse, int readTxnsPooled, int readSlots) {
}

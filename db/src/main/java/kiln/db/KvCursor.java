package kiln.db;

/**
 * The entries of one key range of a {@link KvSpace}, met one at a time in key order or reversed
 * ({@link KvTxn#range}). Before the first {@link #next} it stands before the first entry.
 */
public interface KvCursor extends AutoCloseable {
    /** @return true when it moved to the next entry of the range; false once the range is done */
    boolean next();

    /** @return the current entry's key, read-only, valid until the next call on this range or its transaction */
    java.nio.ByteBuffer key();

    /** @return the current entry's value, read-only, valid as {@link #key} */
    java.nio.ByteBuffer value();

    /** Ends the walk (it may hold an engine cursor). */
    @Override
    void close();
}

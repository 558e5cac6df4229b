package kiln.db.lmdb;

import java.nio.ByteBuffer;

import kiln.db.Keys;

import org.lmdbjava.CursorIterable;
import org.lmdbjava.Dbi;

/**
 * Reads one LMDB table entirely: every entry, in key order, against the entry count the table's
 * record holds. For {@code Db.verify} and for a backup's read-back ({@link LmdbBackup}).
 */
final class Walk {
    private Walk() {
    }

    /**
     * @return the number of entries
     * @throws IllegalStateException naming the first inconsistency: an entry without key or value,
     *         keys out of order, or a count that differs from the table's record
     */
    static long table(String name, Dbi<ByteBuffer> dbi, org.lmdbjava.Txn<ByteBuffer> txn) {
        long seen = 0;
        byte[] previous = null;
        try (CursorIterable<ByteBuffer> all = dbi.iterate(txn)) {
            for (CursorIterable.KeyVal<ByteBuffer> kv : all) {
                ByteBuffer key = kv.key();
                if (key == null || kv.val() == null) throw new IllegalStateException("table '" + name + "' has an entry without key or value");
                if (previous != null && Keys.compare(key, previous) <= 0) {
                    throw new IllegalStateException("table '" + name + "' has keys out of order after entry " + seen);
                }
                previous = Keys.toArray(key);
                seen++;
            }
        }
        long recorded = dbi.stat(txn).entries;
        if (seen != recorded) throw new IllegalStateException("table '" + name + "' records " + recorded + " entries but holds " + seen);
        return seen;
    }
}

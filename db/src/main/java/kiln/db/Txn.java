package kiln.db;

import java.nio.ByteBuffer;
import java.util.ArrayList;

import org.lmdbjava.LmdbException;

/**
 * One LMDB transaction as a query sees it. Hand it to {@link Table} methods; it is only valid
 * inside the {@link Query#run} call that received it.
 *
 * <p>Read transactions see a consistent snapshot taken when the query started. The write
 * transaction sees every write committed before it plus its own.
 */
public final class Txn {
    final org.lmdbjava.Txn<ByteBuffer> lmdb;
    private final boolean readOnly;
    /** Set once an LMDB call failed in this transaction: LMDB then answers every later call MDB_BAD_TXN. */
    private boolean failed;
    /** A write query's puts and deletes on tables with a {@link ChangeFeed}: table, {@link Recorded}, ...; null while none. */
    private ArrayList<Object> changes;

    Txn(org.lmdbjava.Txn<ByteBuffer> lmdb, boolean readOnly) {
        this.lmdb = lmdb;
        this.readOnly = readOnly;
    }

    /** @return true for a {@link Db#read} transaction, false inside {@link Db#write} */
    public boolean isReadOnly() {
        return readOnly;
    }

    /** Records a put or a delete on a table with a change feed. */
    <K, V> void changed(Table<K, V> table, Recorded<K, V> change) {
        if (changes == null) changes = new ArrayList<>();
        changes.add(table);
        changes.add(change);
    }

    /** @return what {@link #changed} recorded, as table, {@link Recorded} pairs; null when nothing was */
    ArrayList<Object> changes() {
        return changes;
    }

    /**
     * Notes that an LMDB call in this transaction failed, and tells corruption from misuse: LMDB
     * answers MDB_BAD_TXN to every call after a failed one in the same transaction (a query that
     * caught an LMDB error and went on), but also to the first call when it could not read a
     * table's record from the main database (mdb_cursor_init ignores that read's error and flags
     * the transaction): a transaction's first failure being MDB_BAD_TXN means a corrupted page.
     *
     * @return what to throw: {@code e}, or a {@link Db.CorruptedPage} when it is the first failure
     *         and MDB_BAD_TXN
     */
    RuntimeException failure(LmdbException e) {
        boolean first = !failed;
        failed = true;
        return first && e instanceof org.lmdbjava.Txn.BadException ? new Db.CorruptedPage(e) : e;
    }

    void checkWritable(String op) {
        if (readOnly) {
            throw new IllegalStateException(op + " needs a write transaction: run it inside db.write(txn -> ...), not db.read");
        }
    }
}

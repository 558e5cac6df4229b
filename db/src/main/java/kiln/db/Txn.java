package kiln.db;

import java.nio.ByteBuffer;

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

    Txn(org.lmdbjava.Txn<ByteBuffer> lmdb, boolean readOnly) {
        this.lmdb = lmdb;
        this.readOnly = readOnly;
    }

    /** @return true for a {@link Db#read} transaction, false inside {@link Db#write} */
    public boolean isReadOnly() {
        return readOnly;
    }

    void checkWritable(String op) {
        if (readOnly) {
            throw new IllegalStateException(op + " needs a write transaction: run it inside db.write(txn -> ...), not db.read");
        }
    }
}

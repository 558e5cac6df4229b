package kiln.db;

import java.nio.file.Path;
import java.util.List;

/** A {@link KvEngine} that passes every call to another: tests override what they watch or change. */
class ForwardingEngine implements KvEngine {
    private final KvEngine inner;

    ForwardingEngine(KvEngine inner) {
        this.inner = inner;
    }

    @Override
    public KvSpace space(KvTxn txn, String name, boolean create) {
        return inner.space(txn, name, create);
    }

    @Override
    public List<String> spaceNames(KvTxn txn) {
        return inner.spaceNames(txn);
    }

    @Override
    public KvTxn beginRead() {
        return inner.beginRead();
    }

    @Override
    public KvTxn beginWrite() {
        return inner.beginWrite();
    }

    @Override
    public long verify(KvTxn txn, KvSpace space) {
        return inner.verify(txn, space);
    }

    @Override
    public Path backup(Path target, long mark) {
        return inner.backup(target, mark);
    }

    @Override
    public String fatalCause(RuntimeException e) {
        return inner.fatalCause(e);
    }

    @Override
    public KvStats stats() {
        return inner.stats();
    }

    @Override
    public int readThreads() {
        return inner.readThreads();
    }

    @Override
    public void onCommits(java.util.function.Consumer<String> changed) {
        inner.onCommits(changed);
    }

    @Override
    public void deadline(java.time.Duration deadline) {
        inner.deadline(deadline);
    }

    @Override
    public void close() {
        inner.close();
    }

    @Override
    public String location() {
        return inner.location();
    }

    @Override
    public String toString() {
        return inner.toString();
    }
}

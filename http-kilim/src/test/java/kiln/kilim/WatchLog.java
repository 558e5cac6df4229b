package kiln.kilim;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** What the {@link BlockedCarrierChecker} logs while a test runs: {@link #start()} in a set-up, {@link #close()} in the tear-down. */
final class WatchLog extends Handler implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(BlockedCarrierChecker.class.getName());

    /** The messages logged since {@link #start()}, in order. */
    final List<String> messages = new CopyOnWriteArrayList<>();

    private WatchLog() {
    }

    static WatchLog start() {
        WatchLog log = new WatchLog();
        LOG.addHandler(log);
        return log;
    }

    @Override
    public void publish(LogRecord r) {
        messages.add(r.getMessage());
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        LOG.removeHandler(this);
    }
}

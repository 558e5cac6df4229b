package kiln.http;

/** A {@link Connection.Owner} for tests that drive a connection by hand: 1 s timeouts, never stopping, a content limit. */
final class TestOwner implements Connection.Owner {
    private final int maxContent;

    TestOwner() {
        this(Limits.MAX_CONTENT);
    }

    TestOwner(int maxContent) {
        this.maxContent = maxContent;
    }

    @Override
    public long idleTimeoutNanos() {
        return 1_000_000_000L;
    }

    @Override
    public long headerTimeoutNanos() {
        return 1_000_000_000L;
    }

    @Override
    public boolean isStopping() {
        return false;
    }

    @Override
    public int maxContentBytes() {
        return maxContent;
    }
}

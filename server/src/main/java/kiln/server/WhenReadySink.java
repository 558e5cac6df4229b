package kiln.server;

import java.io.IOException;
import java.util.function.Consumer;

/**
 * An {@link OpenStreams.AsyncSink} over an output in the style of servlet async I/O (Servlet 3.1,
 * {@code ServletOutputStream.isReady()} with a {@code WriteListener}): a part is written and
 * flushed only while the output says it is ready; when it is not, the container calls
 * {@link #onWritePossible} once it is, and the part goes on from there. No thread waits for a slow
 * client. One class for Jetty 12 (jakarta.servlet) and Jetty 9.4 (javax.servlet): each front end
 * adapts its output's three calls and forwards its {@code WriteListener}'s two.
 */
public abstract class WhenReadySink implements OpenStreams.AsyncSink {
    private static final int IDLE = 0;
    private static final int WRITE = 1;
    private static final int FLUSH = 2;
    private static final int DONE = 3;

    // guarded by this: the part being written and how far it got
    private int state = IDLE;
    private byte[] bytes;
    private int length;
    private Consumer<Throwable> written;
    private Throwable failure;

    /** @return the output's {@code isReady()}: true when a write or flush may be made now; false arranges an {@link #onWritePossible} */
    protected abstract boolean isReady();

    /** The output's {@code write(bytes, 0, length)}, made only when {@link #isReady()}. */
    protected abstract void writeNow(byte[] bytes, int length) throws IOException;

    /** The output's {@code flush()}, made only when {@link #isReady()}. */
    protected abstract void flushNow() throws IOException;

    @Override
    public final void write(byte[] part, int partLength, Consumer<Throwable> done) {
        Throwable failed;
        synchronized (this) {
            failed = failure;
            if (failed == null) {
                bytes = part;
                length = partLength;
                written = done;
                state = partLength == 0 ? FLUSH : WRITE;
            }
        }
        if (failed != null) {
            done.accept(failed);
        } else {
            onWritePossible();
        }
    }

    /** Goes on with the part being written as far as the output is ready: the {@code WriteListener}'s callback. */
    public final void onWritePossible() {
        Consumer<Throwable> done = null;
        Throwable failed = null;
        synchronized (this) {
            try {
                while (state != IDLE) {
                    if (!isReady()) return;  // the container calls onWritePossible when it is
                    if (state == WRITE) {
                        writeNow(bytes, length);
                        state = FLUSH;
                    } else if (state == FLUSH) {
                        flushNow();
                        state = DONE;
                    } else {
                        done = finished();
                    }
                }
            } catch (IOException | RuntimeException e) {
                failure = e;
                failed = e;
                done = finished();
            }
        }
        if (done != null) done.accept(failed);
    }

    /** The output failed (the client left, an idle timeout): the {@code WriteListener}'s callback. */
    public final void onError(Throwable t) {
        Consumer<Throwable> done;
        synchronized (this) {
            failure = t;
            done = state == IDLE ? null : finished();
        }
        if (done != null) done.accept(t);
    }

    /** @return the callback of the part just finished; the sink is idle again */
    private Consumer<Throwable> finished() {
        Consumer<Throwable> done = written;
        state = IDLE;
        bytes = null;
        written = null;
        return done;
    }
}

package kiln.undertow;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import io.undertow.server.HttpServerExchange;
import kiln.server.OpenStreams;
import org.xnio.ChannelListener;
import org.xnio.ChannelListeners;
import org.xnio.IoUtils;
import org.xnio.channels.StreamSinkChannel;

/**
 * A streamed body written to Undertow's response channel without blocking: each part is written
 * and flushed (one chunk: Undertow chunks a body without Content-Length on HTTP/1.1, and ends it with
 * the connection on HTTP/1.0); when the channel cannot take it all, a write listener on the IO thread
 * goes on once it can.
 *
 * <p>A client that does not read is cut here, after the idle timeout without progress: Undertow's own
 * idle timeout ({@code IDLE_TIMEOUT}) did not fire while a response write waited (measured with
 * Undertow 2.4.4: a subscriber that never read held its stream for ever), so a timer on the
 * connection's IO thread closes the connection and fails the write with a {@link TimeoutException}.
 */
final class ChannelStream implements OpenStreams.AsyncSink {
    private final HttpServerExchange exchange;
    private final StreamSinkChannel channel;
    private final long idleNanos;
    /** The callback of the write under way, claimed once: by its end, its failure, or the stall timer. */
    private final AtomicReference<Consumer<Throwable>> pending = new AtomicReference<>();
    /** System.nanoTime() when the write under way stopped making progress; 0 while it makes progress. */
    private volatile long stalledAt;

    ChannelStream(HttpServerExchange exchange) {
        this.exchange = exchange;
        this.channel = exchange.getResponseChannel();
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(Exchanges.idleTimeoutMs(exchange));
    }

    @Override
    public void write(byte[] bytes, int length, Consumer<Throwable> written) {
        pending.set(written);
        pump(ByteBuffer.wrap(bytes, 0, length));
    }

    /** Writes what the channel takes now; the rest, and the flush, from its write listener. */
    private void pump(ByteBuffer part) {
        try {
            while (part.hasRemaining()) {
                if (channel.write(part) == 0) {
                    stalled();
                    channel.getWriteSetter().set(ch -> {
                        ch.suspendWrites();
                        pump(part);
                    });
                    channel.resumeWrites();
                    return;
                }
                stalledAt = 0;
            }
            if (!channel.flush()) {
                stalled();
                ChannelListener<StreamSinkChannel> flushed = ch -> {
                    ch.suspendWrites();
                    done(null);
                };
                channel.getWriteSetter().set(ChannelListeners.flushingChannelListener(flushed, (ch, e) -> done(e)));
                channel.resumeWrites();
                return;
            }
            done(null);
        } catch (IOException e) {
            done(e);
        }
    }

    private void done(Throwable failure) {
        stalledAt = 0;
        Consumer<Throwable> written = pending.getAndSet(null);
        if (written != null) written.accept(failure);
    }

    /** The channel took nothing: from now on, the idle timeout counts (once per stall). */
    private void stalled() {
        if (stalledAt != 0 || idleNanos <= 0) return;
        stalledAt = System.nanoTime();
        exchange.getIoThread().executeAfter(this::checkStall, idleNanos, TimeUnit.NANOSECONDS);
    }

    /** On the IO thread: a write without progress for the idle timeout is cut; one that progressed is watched again. */
    private void checkStall() {
        long since = stalledAt;
        if (since == 0 || pending.get() == null) return;
        long waited = System.nanoTime() - since;
        if (waited < idleNanos) {
            exchange.getIoThread().executeAfter(this::checkStall, idleNanos - waited, TimeUnit.NANOSECONDS);
            return;
        }
        IoUtils.safeClose(exchange.getConnection());
        done(new IOException(new TimeoutException("no progress writing for " + TimeUnit.NANOSECONDS.toMillis(waited) + " ms")));
    }

    @Override
    public void finish(boolean complete) {
        if (!complete) IoUtils.safeClose(exchange.getConnection());  // without the last chunk: the client sees a cut body
        exchange.endExchange();  // closes the channel: the last chunk
    }
}

package kiln.undertow;

import java.io.IOException;
import java.nio.ByteBuffer;
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
 * <p>A client that does not read is cut at the minimum response rate's deadline
 * ({@link OpenStreams}, {@link #cut}): Undertow's own idle timeout ({@code IDLE_TIMEOUT}) is never
 * armed on an HTTP/1.1 connection (Undertow 2.4.4: a subscriber that never read held its stream for ever).
 * One that leaves, or sends anything, ends the stream at once ({@link ClientWatch}).
 */
final class ChannelStream implements OpenStreams.AsyncSink {
    private final HttpServerExchange exchange;
    private final StreamSinkChannel channel;
    /** The client's watch, once the head went out; null before. */
    private volatile ClientWatch watch;
    /** The callback of the write under way, claimed once: by its end, its failure, or the cut. */
    private final AtomicReference<Consumer<Throwable>> pending = new AtomicReference<>();

    ChannelStream(HttpServerExchange exchange) {
        this.exchange = exchange;
        this.channel = exchange.getResponseChannel();
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
                    channel.getWriteSetter().set(ch -> {
                        ch.suspendWrites();
                        pump(part);
                    });
                    channel.resumeWrites();
                    return;
                }
            }
            if (!channel.flush()) {
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
        Consumer<Throwable> written = pending.getAndSet(null);
        if (written != null) written.accept(failure);
    }

    /** Closes the connection and fails the write under way: it outlived its deadline. */
    @Override
    public void cut() {
        IoUtils.safeClose(exchange.getConnection());
        done(new IOException(new TimeoutException("the client did not read the streamed body")));
    }

    @Override
    public void watchClient(Runnable left) {
        watch = ClientWatch.start(exchange, left);
    }

    @Override
    public void finish(boolean complete) {
        Runnable end = () -> {
            if (!complete) IoUtils.safeClose(exchange.getConnection());  // without the last chunk: the client sees a cut body
            exchange.endExchange();  // closes the channel: the last chunk
        };
        ClientWatch w = watch;
        if (w == null) {
            end.run();
        } else {
            w.stop(end);  // on the IO thread, after the watch's last read
        }
    }
}

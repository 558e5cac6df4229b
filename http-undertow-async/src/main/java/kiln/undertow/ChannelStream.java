package kiln.undertow;

import java.io.IOException;
import java.nio.ByteBuffer;
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
 * goes on once it can. A client that does not read is cut by Undertow's idle timeout, which closes the
 * channel and fails the pending write.
 */
final class ChannelStream implements OpenStreams.AsyncSink {
    private final HttpServerExchange exchange;
    private final StreamSinkChannel channel;

    ChannelStream(HttpServerExchange exchange) {
        this.exchange = exchange;
        this.channel = exchange.getResponseChannel();
    }

    @Override
    public void write(byte[] bytes, int length, Consumer<Throwable> written) {
        pump(ByteBuffer.wrap(bytes, 0, length), written);
    }

    /** Writes what the channel takes now; the rest, and the flush, from its write listener. */
    private void pump(ByteBuffer part, Consumer<Throwable> written) {
        try {
            while (part.hasRemaining()) {
                if (channel.write(part) == 0) {
                    channel.getWriteSetter().set(ch -> {
                        ch.suspendWrites();
                        pump(part, written);
                    });
                    channel.resumeWrites();
                    return;
                }
            }
            if (!channel.flush()) {
                ChannelListener<StreamSinkChannel> flushed = ch -> {
                    ch.suspendWrites();
                    written.accept(null);
                };
                channel.getWriteSetter().set(ChannelListeners.flushingChannelListener(flushed, (ch, e) -> written.accept(e)));
                channel.resumeWrites();
                return;
            }
            written.accept(null);
        } catch (IOException e) {
            written.accept(e);
        }
    }

    @Override
    public void finish(boolean complete) {
        if (!complete) IoUtils.safeClose(exchange.getConnection());  // without the last chunk: the client sees a cut body
        exchange.endExchange();  // closes the channel: the last chunk
    }
}

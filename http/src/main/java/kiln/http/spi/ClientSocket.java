package kiln.http.spi;

import java.io.Closeable;
import java.io.IOException;
import java.nio.channels.SocketChannel;

/**
 * A {@link Connection}'s accepted socket as its server holds it between reads and writes: the loop
 * half-closes and closes it, the reaper half-closes it from its own thread when a deadline passes
 * (the loop's read then sees end of stream and closes it). The JDK's {@link SocketChannel}
 * ({@link #of}), or a front end's own descriptor: Kilim's epoll transport keeps a bare descriptor
 * rather than the JDK's channel and its dozen objects.
 *
 * <p>An implementation must make a half-close after the close do nothing, even from another thread:
 * once closed, the descriptor's number may already be a new connection's.
 */
public interface ClientSocket extends Closeable {
    /** Shuts down the input: a read then sees end of stream. From any thread; nothing once closed. @throws IOException from the system call */
    void shutdownInput() throws IOException;

    /** Shuts down the output: the client reads end of stream. From any thread; nothing once closed. @throws IOException from the system call */
    void shutdownOutput() throws IOException;

    /** @return the JDK channel when this is one, else null */
    default SocketChannel channel() {
        return null;
    }

    /** @return {@code ch} as a client socket; null for null */
    static ClientSocket of(SocketChannel ch) {
        return ch == null ? null : new Channel(ch);
    }

    /** A JDK channel: its own locks order a close against a half-close from another thread. */
    record Channel(SocketChannel channel) implements ClientSocket {
        @Override
        public void shutdownInput() throws IOException {
            channel.shutdownInput();
        }

        @Override
        public void shutdownOutput() throws IOException {
            channel.shutdownOutput();
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}

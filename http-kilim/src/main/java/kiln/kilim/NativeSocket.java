package kiln.kilim;

import java.io.IOException;

import io.netty.channel.unix.Socket;
import kiln.http.spi.ClientSocket;

/**
 * An accepted connection's bare descriptor, for the epoll transport ({@link EpollPoller}): Netty's
 * {@link Socket} (its JNI reads, writes, half-closes and close) and nothing else, where the JDK's
 * {@code SocketChannel} keeps a dozen objects per connection (two locks, two socket addresses with
 * their holders, a {@code FileDescriptor}: about 460 bytes, 9 MB at 19,500 connections).
 *
 * <p>The close and the half-closes hold this object's lock, so that the reaper's half-close, from
 * its own thread, never reaches a descriptor number that the loop closed meanwhile and the kernel
 * gave to a new connection: once closed, a half-close does nothing.
 */
final class NativeSocket extends Socket implements ClientSocket {
    /** @param fd an accepted, non-blocking stream socket's descriptor, owned (closed) by this from now on */
    NativeSocket(int fd) {
        super(fd);
    }

    @Override
    public synchronized void shutdownInput() throws IOException {
        if (isOpen()) shutdown(true, false);
    }

    @Override
    public synchronized void shutdownOutput() throws IOException {
        if (isOpen()) shutdown(false, true);
    }

    @Override
    public synchronized void close() throws IOException {
        super.close();
    }
}

package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import io.netty.channel.epoll.Epoll;

/**
 * The epoll transport's bare descriptor: the reaper half-closes it from its own thread, possibly
 * after the loop closed it, when the kernel may have given its number to a new connection.
 */
class NativeSocketTest {
    @Test
    void aHalfCloseAfterTheCloseDoesNothing() throws Exception {
        assumeTrue(Epoll.isAvailable(), "Netty's epoll library is not available here");
        NativeSocket s = new NativeSocket(io.netty.channel.unix.Socket.newSocketStream().intValue());
        s.close();
        assertFalse(s.isOpen());
        // Netty's own Socket would throw ClosedChannelException; the reaper must not even reach the system call
        assertDoesNotThrow(s::shutdownInput);
        assertDoesNotThrow(s::shutdownOutput);
        assertDoesNotThrow(s::close);
    }

    @Test
    void readsWritesAndHalfClosesAConnection() throws Exception {
        assumeTrue(Epoll.isAvailable(), "Netty's epoll library is not available here");
        try (ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             Socket client = new Socket()) {
            client.connect(server.getLocalAddress());
            io.netty.channel.unix.Socket accepting = new io.netty.channel.unix.Socket(EpollPoller.descriptor(server));
            byte[] address = new byte[26];
            int fd = -1;
            for (int i = 0; i < 100 && (fd = accepting.accept(address)) < 0; i++) Thread.sleep(10);
            NativeSocket s = new NativeSocket(fd);
            try {
                ByteBuffer out = ByteBuffer.allocateDirect(5).put("hello".getBytes(StandardCharsets.US_ASCII)).flip();
                assertEquals(5, s.writeAddress(io.netty.channel.unix.Buffer.memoryAddress(out), 0, 5));
                InputStream in = client.getInputStream();
                assertEquals("hello", new String(in.readNBytes(5), StandardCharsets.US_ASCII));
                s.shutdownOutput();  // the client reads the end of the stream
                assertEquals(-1, in.read());
                s.shutdownInput();  // a read sees the end of the stream
                ByteBuffer buf = ByteBuffer.allocateDirect(8);
                assertEquals(-1, s.readAddress(io.netty.channel.unix.Buffer.memoryAddress(buf), 0, 8));
            } finally {
                s.close();
            }
        }
    }
}

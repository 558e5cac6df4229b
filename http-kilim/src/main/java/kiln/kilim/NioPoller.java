package kiln.kilim;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.function.Consumer;

import kiln.http.spi.ClientSocket;
import kiln.http.spi.Connection;
import kiln.server.Connections;

/**
 * A {@link Poller} on the JDK's NIO: a {@link Selector} per poller, a {@link SelectionKey} per
 * connection, reads and writes through the {@link SocketChannel}. Works wherever the JDK does.
 */
final class NioPoller extends Poller {
    private final Selector selector;
    private final SelectionKey acceptKey;
    /** The keys one select reported: the loop's thread's, made again by a thread that takes the carrier over. */
    private volatile Reported reported;

    /** @throws IOException when the selector cannot be opened */
    NioPoller(Serve serve, Connections connections, Carriers carriers, int index, ServerSocketChannel listener) throws IOException {
        super(serve, connections, carriers, index, listener);
        this.selector = Selector.open();
        this.acceptKey = listener == null ? null : listener.register(selector, SelectionKey.OP_ACCEPT);
        becomeLoop(selector::wakeup);
    }

    @Override
    void attach(Object key, Object attachment) {
        ((SelectionKey) key).attach(attachment);
    }

    @Override
    boolean await(Object key, int op, Object attachment) {
        SelectionKey k = (SelectionKey) key;
        k.attach(attachment);
        try {
            k.interestOps(op);
        } catch (CancelledKeyException e) {
            return false;
        }
        wakeup();  // the selector applies interest changes when it next selects
        return true;
    }

    @Override
    void wakeupPoll() {
        selector.wakeup();
    }

    private static SocketChannel channel(Object key) {
        return (SocketChannel) ((SelectionKey) key).channel();
    }

    @Override
    int readDirect(Object key, ByteBuffer d) throws IOException {
        return channel(key).read(d);
    }

    @Override
    int writeDirect(Object key, ByteBuffer d) throws IOException {
        return channel(key).write(d);
    }

    /** The channel's own read, which takes any buffer (a heap one through the JDK's per-thread direct buffers). */
    @Override
    int readElsewhere(Object key, ByteBuffer dst) throws IOException {
        return readDirect(key, dst);
    }

    /** The channel's own write, as {@link #readElsewhere}. */
    @Override
    int writeElsewhere(Object key, ByteBuffer src) throws IOException {
        return writeDirect(key, src);
    }

    @Override
    boolean acceptOne() throws IOException {
        SocketChannel ch = listener.accept();
        if (ch == null) return false;
        try {
            ch.configureBlocking(false);
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        } catch (IOException e) {  // reset before it was accepted, most likely
            connections.acceptFailed(e);
            Connections.closeQuietly(ch);
            return true;
        }
        InetSocketAddress client = connections.admit(ch);  // a refused one is answered 503 and closed there
        if (client != null) deal(ClientSocket.of(ch), client);
        return true;
    }

    @Override
    void loopStarts() {
        reported = new Reported();
    }

    @Override
    int poll(long sleepMs) throws IOException {
        Reported r = reported;
        if (sleepMs == 0) {
            selector.selectNow(r);
        } else {
            selector.select(r, sleepMs < 0 ? 0 : sleepMs);  // a timeout of 0 blocks until woken
        }
        carriers.awake(index);  // before the fibers run: what they queue for this carrier need not wake it
        carriers.readClock();
        int polled = 0;
        for (int i = 0, n = r.count; i < n; i++) {
            SelectionKey key = r.keys[i];
            r.keys[i] = null;
            if (key == acceptKey) {
                polled = LISTENER_READY;
            } else if (!ready(key, key.attachment())) {
                return -1;  // the new owner selects again: the keys not yet handled are reported anew
            }
        }
        r.count = 0;
        return polled;
    }

    @Override
    boolean clearInterest(Object key) {
        try {
            ((SelectionKey) key).interestOps(0);
            return true;
        } catch (CancelledKeyException e) {
            return false;
        }
    }

    /**
     * The keys one select reported, in the order reported, for the loop to go through once the
     * select returned (a fiber it runs may pause or block, which it must not do inside the select).
     * The selector's own selected-key set is not used: a {@code HashSet} to which each report adds a
     * node, hashed, and from which the loop removes it again.
     */
    private static final class Reported implements Consumer<SelectionKey> {
        /** Room for the most one select reports, the JDK's epoll selector's 1,024 events, without growing. */
        SelectionKey[] keys = new SelectionKey[1024];
        int count;

        @Override
        public void accept(SelectionKey key) {
            if (count == keys.length) keys = Arrays.copyOf(keys, 2 * count);
            keys[count++] = key;
        }
    }

    @Override
    void close(Object key, Connection c) {
        closeSocket(c);
        wakeup();  // the selector deregisters the key, which really closes the socket
    }

    @Override
    void acceptInterest(boolean on) {
        if (acceptKey.isValid()) acceptKey.interestOps(on ? SelectionKey.OP_ACCEPT : 0);  // invalid once the server stops
    }

    @Override
    void register(Connection c) {
        try {
            c.channel().register(selector, SelectionKey.OP_READ, c);
        } catch (ClosedChannelException e) {
            close(null, c);
        }
    }

    @Override
    void closeIdleAndPoll() throws IOException {
        for (SelectionKey key : selector.keys()) {
            if (key.isValid() && key.interestOps() == SelectionKey.OP_READ && key.attachment() instanceof Connection c) {
                close(key, c);
            }
        }
        selector.close();
    }
}

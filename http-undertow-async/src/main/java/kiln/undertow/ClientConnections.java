package kiln.undertow;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

import kiln.http.Reply;
import kiln.http.spi.ResponseWriter;
import kiln.server.ClientLimits;
import org.xnio.ChannelListener;
import org.xnio.ChannelListeners;
import org.xnio.IoUtils;
import org.xnio.StreamConnection;

/**
 * Each client address's share of the listener's connections ({@code --max-client-connections}),
 * in front of Undertow's own open listener: it sees every accepted connection first, refuses one
 * over its client's share with a one-shot 503 and {@code Retry-After}, and hands the others on,
 * counted until they close. Undertow's builder has no such hook, so {@link UndertowServer}
 * assembles its listener itself.
 */
final class ClientConnections implements ChannelListener<StreamConnection> {
    private final ChannelListener<StreamConnection> next;
    private final ClientLimits clients;

    /** @param next Undertow's open listener */
    ClientConnections(ChannelListener<StreamConnection> next, ClientLimits clients) {
        this.next = next;
        this.clients = clients;
    }

    @Override
    public void handleEvent(StreamConnection connection) {
        InetSocketAddress peer = connection.getPeerAddress(InetSocketAddress.class);
        if (peer == null) {
            next.handleEvent(connection);
            return;
        }
        if (!clients.connected(peer.getAddress())) {
            try {
                connection.getSinkChannel().write(ByteBuffer.wrap(ResponseWriter.closing(
                    Reply.unavailable("too many connections from " + peer.getAddress().getHostAddress() + "; retry shortly"))));
            } catch (IOException e) {
                // best effort: the close is what matters
            }
            IoUtils.safeClose(connection);
            return;
        }
        AtomicBoolean released = new AtomicBoolean();
        Runnable release = () -> {
            if (released.compareAndSet(false, true)) clients.disconnected(peer.getAddress());
        };
        try {
            next.handleEvent(connection);
        } finally {
            // Undertow's connection sets its own close listener as it is made: ours goes after it
            ChannelListener<? super StreamConnection> undertows = connection.getCloseListener();
            connection.setCloseListener(c -> {
                ChannelListeners.invokeChannelListener(c, undertows);
                release.run();
            });
            if (!connection.isOpen()) release.run();
        }
    }
}

package kiln.undertow;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

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
        Counted counted = new Counted(clients, peer.getAddress());
        try {
            next.handleEvent(connection);
        } finally {
            // Undertow's connection sets its own close listener as it is made: ours goes after it
            counted.undertows = connection.getCloseListener();
            connection.setCloseListener(counted);
            if (!connection.isOpen()) counted.release();
        }
    }

    /** A connection counted against its client's share until it closes: Undertow's close listener, then the release (one object a connection). */
    private static final class Counted implements ChannelListener<StreamConnection> {
        private final ClientLimits clients;
        private final InetAddress client;
        private ChannelListener<? super StreamConnection> undertows;
        private boolean released;

        Counted(ClientLimits clients, InetAddress client) {
            this.clients = clients;
            this.client = client;
        }

        @Override
        public void handleEvent(StreamConnection connection) {
            ChannelListeners.invokeChannelListener(connection, undertows);
            release();
        }

        synchronized void release() {
            if (released) return;
            released = true;
            clients.disconnected(client);
        }
    }
}

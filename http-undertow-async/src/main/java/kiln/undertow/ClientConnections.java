package kiln.undertow;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

import kiln.http.Response;
import kiln.http.spi.ResponseWriter;
import kiln.server.ClientLimits;
import org.xnio.ChannelListener;
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
        if (peer == null || !clients.counts(peer.getAddress())) {
            next.handleEvent(connection);  // a proxy's or an unknown address: nothing to count, nothing to release
            return;
        }
        if (!clients.connected(peer.getAddress())) {
            try {
                connection.getSinkChannel().write(ByteBuffer.wrap(ResponseWriter.closing(
                    Response.unavailable("too many connections from " + peer.getAddress().getHostAddress() + "; retry shortly"))));
            } catch (IOException e) {
                // best effort: the close is what matters
            }
            IoUtils.safeClose(connection);
            return;
        }
        try {
            next.handleEvent(connection);
        } finally {
            // XNIO 3.8 merges close listeners (ours runs after the one Undertow's connection set as it
            // was made) and runs one set after the close at once, so the count is released either way
            connection.setCloseListener(new Counted(clients, peer.getAddress()));
        }
    }

    /** A connection counted against its client's share until it closes (one object a connection). */
    private static final class Counted implements ChannelListener<StreamConnection> {
        private final ClientLimits clients;
        private final InetAddress client;

        Counted(ClientLimits clients, InetAddress client) {
            this.clients = clients;
            this.client = client;
        }

        @Override
        public void handleEvent(StreamConnection connection) {
            clients.disconnected(client);
        }
    }
}

package kiln.comsat;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import kiln.http.Response;
import kiln.http.spi.ResponseWriter;
import kiln.server.ClientLimits;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;

/**
 * Each client address's share of the connector's connections ({@code --max-client-connections}),
 * as a {@link Connection.Listener} bean of the connector: Jetty tells it of every connection it
 * opens, before reading from it, and of its close. One over its client's share gets a one-shot
 * 503 with {@code Retry-After} and is closed. (Jetty 9.4 limits connections only in all,
 * {@code NetworkConnectionLimit}; its per-address handlers limit requests.)
 */
final class ClientConnections implements Connection.Listener {
    private final ClientLimits clients;
    /** Connections refused at their open: their close gives nothing back. */
    private final Set<Connection> refused = ConcurrentHashMap.newKeySet();

    ClientConnections(ClientLimits clients) {
        this.clients = clients;
    }

    @Override
    public void onOpened(Connection connection) {
        InetSocketAddress client = address(connection);
        if (client == null || clients.connected(client.getAddress())) return;
        refused.add(connection);
        EndPoint endPoint = connection.getEndPoint();
        try {
            endPoint.flush(ByteBuffer.wrap(ResponseWriter.closing(Response.unavailable("too many connections from "
                + client.getAddress().getHostAddress() + "; retry shortly"))));
        } catch (java.io.IOException e) {
            // best effort: the close is what matters
        }
        endPoint.close();
    }

    @Override
    public void onClosed(Connection connection) {
        if (refused.remove(connection)) return;
        InetSocketAddress client = address(connection);
        if (client != null) clients.disconnected(client.getAddress());
    }

    private static InetSocketAddress address(Connection connection) {
        SocketAddress a = connection.getEndPoint().getRemoteAddress();
        return a instanceof InetSocketAddress inet ? inet : null;
    }
}

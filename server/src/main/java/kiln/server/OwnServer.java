package kiln.server;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.Limits;

/**
 * What kiln's own front ends (the Kilim server and the virtual-thread one, both on
 * {@link kiln.http.spi.Connection}) share around their loops, written once: the address asked for,
 * the open connections with their limits, reaper and cap ({@link Connections}), the listening
 * socket, and the first steps of a graceful stop. Each subclass adds how a connection waits.
 */
public abstract class OwnServer implements Launcher.Server {
    private static final Logger LOG = Logger.getLogger(OwnServer.class.getName());

    private final String bindAddress;
    private final int requestedPort;
    /** The limits, the open connections and their reaper, the cap's 503, requests in flight: kiln's shared HTTP layer. */
    protected final Connections connections;
    /** The listening socket, once {@link #bind} succeeded. */
    private volatile ServerSocketChannel channel;

    /**
     * @param bindAddress address to listen on, e.g. "0.0.0.0" or "127.0.0.1"
     * @param port        TCP port, 0 for any free port
     * @param router      the handlers, whose request memory and stream limits the connections use
     */
    protected OwnServer(String bindAddress, int port, AbstractRouter<?, ?> router) {
        this.bindAddress = bindAddress;
        this.requestedPort = port;
        this.connections = new Connections(router);
    }

    /**
     * Opens and binds the listening socket ({@code SO_REUSEADDR}, backlog {@link Limits#BACKLOG}).
     *
     * @param blocking false for a socket a selector watches
     * @throws java.net.BindException when the port is in use or the address is not local; the socket is closed again
     */
    protected final ServerSocketChannel bind(boolean blocking) throws IOException {
        InetSocketAddress at = new InetSocketAddress(bindAddress, requestedPort);
        // An IPv4 address gets an IPv4 socket, not the JDK's default IPv6 one bound to the mapped
        // address (which accepts the same clients): its connections skip the IPv6 layer's calls.
        ServerSocketChannel ssc = at.getAddress() instanceof Inet4Address
                ? ServerSocketChannel.open(StandardProtocolFamily.INET) : ServerSocketChannel.open();
        try {
            ssc.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            ssc.bind(at, Limits.BACKLOG);
            ssc.configureBlocking(blocking);
        } catch (IOException e) {
            ssc.close();
            throw e;
        }
        channel = ssc;
        return ssc;
    }

    /** @return the port actually bound (useful with port 0) */
    @Override
    public final int port() {
        return channel.socket().getLocalPort();
    }

    /** @return open client connections right now */
    public final int connections() {
        return connections.count();
    }

    /** @return the connection cap in force */
    public final int maxConnections() {
        return connections.limits().maxConnections();
    }

    /**
     * The first steps of a graceful stop: the connections are told (new requests get
     * {@code Connection: close}), and the listening socket is closed.
     */
    protected final void beginStop() {
        connections.beginStop();
        ServerSocketChannel ch = channel;
        try {
            if (ch != null) ch.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "closing the listening socket", e);
        }
    }
}

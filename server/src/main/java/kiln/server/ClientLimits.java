package kiln.server;

import java.net.InetAddress;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The shares of one server's connections and event streams that one client address may hold, as
 * nginx's {@code limit_conn} keyed by {@code $binary_remote_addr}, and the cap on event streams of
 * all clients ({@code --max-streams}). Counted exactly, from the moment a connection is accepted or a
 * stream is answered until it ends; an address's count is dropped when it falls to zero, so the
 * table holds only addresses with something open. Addresses of the reverse proxies in front
 * ({@link ServerLimits#proxies}) carry many clients and are not counted per client. A client's share
 * is at most half of the cap it is a share of, so that one address never holds every slot however
 * the two are set (a blocking mode's few streams among them). Thread-safe.
 */
public final class ClientLimits {
    private final int maxClientConnections;
    private final int maxClientStreams;
    private final int maxStreams;
    private final Set<InetAddress> proxies;
    private final ConcurrentHashMap<InetAddress, Integer> connections = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<InetAddress, Integer> streams = new ConcurrentHashMap<>();
    private final AtomicInteger streamsOpen = new AtomicInteger();
    private final AtomicLong refusedClientConnections = new AtomicLong();
    private final AtomicLong refusedClientStreams = new AtomicLong();
    private final AtomicLong refusedStreams = new AtomicLong();

    /** @param limits the per-client limits, the stream cap and the exempt proxies */
    public ClientLimits(ServerLimits limits) {
        this.maxClientConnections = share(limits.maxClientConnections(), limits.maxConnections());
        this.maxClientStreams = share(limits.maxClientStreams(), limits.maxStreams());
        this.maxStreams = limits.maxStreams();
        this.proxies = limits.proxies();
    }

    /** @return {@code perClient}, at most half of {@code cap} (at least 1); {@code cap} at {@code Integer.MAX_VALUE} is no cap */
    private static int share(int perClient, int cap) {
        return cap == Integer.MAX_VALUE ? perClient : Math.min(perClient, Math.max(1, cap / 2));
    }

    /** @return the connections one client address may hold open, as enforced */
    public int maxClientConnections() {
        return maxClientConnections;
    }

    /** @return the event streams one client address may hold open, as enforced */
    public int maxClientStreams() {
        return maxClientStreams;
    }

    /** @return the event streams of all clients that may be open at once; {@code Integer.MAX_VALUE} for no cap */
    public int maxStreams() {
        return maxStreams;
    }

    /**
     * A connection from {@code client} is accepted: counts it, unless the address holds its share already.
     *
     * @param client the client's address; null (unknown) is not counted
     * @return true when it may be served (then {@link #disconnected} once it closes); false: refuse it
     */
    public boolean connected(InetAddress client) {
        if (!counts(client)) return true;
        if (take(connections, client, maxClientConnections)) return true;
        refusedClientConnections.incrementAndGet();
        return false;
    }

    /** A connection {@link #connected} accepted has closed. */
    public void disconnected(InetAddress client) {
        if (counts(client)) give(connections, client);
    }

    /**
     * A handler answered with an event stream for {@code client}: counts it against the cap and the address's share.
     *
     * @return null when it may be sent (then {@link #streamEnded} once it ends); else why it is refused, for a 503
     */
    String streamStarted(InetAddress client) {
        if (streamsOpen.incrementAndGet() > maxStreams) {
            streamsOpen.decrementAndGet();
            refusedStreams.incrementAndGet();
            return "too many event streams open (" + maxStreams + ", --max-streams); retry later";
        }
        if (counts(client) && !take(streams, client, maxClientStreams)) {
            streamsOpen.decrementAndGet();
            refusedClientStreams.incrementAndGet();
            return "too many event streams open from " + client.getHostAddress() + " (" + maxClientStreams + ", --max-client-streams);"
                + " retry later";
        }
        return null;
    }

    /** A stream {@link #streamStarted} let through has ended. */
    void streamEnded(InetAddress client) {
        streamsOpen.decrementAndGet();
        if (counts(client)) give(streams, client);
    }

    /** @return event streams open now */
    int streamsOpen() {
        return streamsOpen.get();
    }

    /** @return how many were refused, by reason: [client connections, client streams, streams] */
    long[] refusals() {
        return new long[] {refusedClientConnections.get(), refusedClientStreams.get(), refusedStreams.get()};
    }

    /** @return whether connections and streams from {@code client} count against a share: false for null (unknown) and for the proxies */
    public boolean counts(InetAddress client) {
        return client != null && !proxies.contains(client);
    }

    private static boolean take(ConcurrentHashMap<InetAddress, Integer> counts, InetAddress client, int max) {
        boolean[] taken = {false};
        counts.compute(client, (k, n) -> {
            int now = n == null ? 0 : n;
            if (now >= max) return n;
            taken[0] = true;
            return now + 1;
        });
        return taken[0];
    }

    private static void give(ConcurrentHashMap<InetAddress, Integer> counts, InetAddress client) {
        counts.computeIfPresent(client, (k, n) -> n <= 1 ? null : n - 1);
    }
}

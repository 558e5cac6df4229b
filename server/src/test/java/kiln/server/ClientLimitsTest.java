package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;

import org.junit.jupiter.api.Test;

/** Connections per client address (nginx's limit_conn): counted exactly, the proxies in front exempt, a share at most half the cap. */
class ClientLimitsTest {
    private static InetAddress at(String address) throws Exception {
        return InetAddress.getByName(address);
    }

    @Test
    void aClientHoldsItsShareOfConnectionsAndAClosedOneGivesItsPlaceBack() throws Exception {
        ClientLimits limits = new ClientLimits(ServerLimits.defaults().maxClientConnections(2));
        InetAddress a = at("192.0.2.1");
        assertTrue(limits.connected(a));
        assertTrue(limits.connected(a));
        assertFalse(limits.connected(a), "a third connection from one address");
        assertTrue(limits.connected(at("192.0.2.2")), "another address has its own share");
        limits.disconnected(a);
        assertTrue(limits.connected(a), "one closed: room again");
        assertEquals(1, limits.refusals()[0]);
    }

    @Test
    void theProxiesInFrontAreNotCountedPerClient() throws Exception {
        ClientLimits limits = new ClientLimits(ServerLimits.defaults().maxClientConnections(1));
        for (int i = 0; i < 10; i++) assertTrue(limits.connected(at("127.0.0.1")), "loopback: nginx in front, many clients");
        ClientLimits none = new ClientLimits(ServerLimits.defaults().maxClientConnections(1).proxies(ServerLimits.parseAddresses("none")));
        assertTrue(none.connected(at("127.0.0.1")));
        assertFalse(none.connected(at("127.0.0.1")), "--proxies none: loopback is a client like any other");
        assertTrue(limits.connected(null), "an unknown address is not counted");
    }

    @Test
    void aClientsShareIsAtMostHalfTheCap() {
        ClientLimits limits = new ClientLimits(ServerLimits.defaults().maxConnections(10).maxClientConnections(256).maxStreams(8));
        assertEquals(5, limits.maxClientConnections());
        assertEquals(4, limits.maxClientStreams());
        assertEquals(ServerLimits.CLIENT_STREAMS, new ClientLimits(ServerLimits.defaults()).maxClientStreams(), "no stream cap: the flag's share");
    }
}

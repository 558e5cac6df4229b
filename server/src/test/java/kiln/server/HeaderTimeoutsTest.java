package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The header-timeout bookkeeping of {@link HeaderTimeouts}, driven tick by tick with a made-up clock. */
class HeaderTimeoutsTest {
    /** A connection as the probe sees it. */
    static final class Conn {
        boolean readingHead;
        long requests;
        boolean expired;
    }

    private final List<Conn> open = new ArrayList<>();
    private final HeaderTimeouts.Probe<Conn> probe = new HeaderTimeouts.Probe<>() {
        @Override
        public boolean readingHead(Conn c) {
            return c.readingHead;
        }

        @Override
        public long requestsBegun(Conn c) {
            return c.requests;
        }

        @Override
        public void expire(Conn c) {
            c.expired = true;
            open.remove(c);
        }
    };

    private HeaderTimeouts<Conn> watch(long headerTimeoutMs) {
        return HeaderTimeouts.manual(headerTimeoutMs, () -> new ArrayList<>(open), probe);
    }

    @Test
    void aHeadStillArrivingAfterTheTimeoutIsExpired() {
        HeaderTimeouts<Conn> w = watch(1_000);
        try {
            Conn slow = new Conn();
            slow.readingHead = true;
            open.add(slow);
            w.tick(10_000);           // first seen
            w.tick(10_999);
            assertEquals(false, slow.expired);
            w.tick(11_000);
            assertEquals(true, slow.expired);
        } finally {
            w.stop();
        }
    }

    @Test
    void eachRequestHeadGetsItsOwnTimeAndIdleConnectionsAreLeftAlone() {
        HeaderTimeouts<Conn> w = watch(1_000);
        try {
            Conn keepAlive = new Conn();
            open.add(keepAlive);
            keepAlive.readingHead = true;
            w.tick(0);
            keepAlive.requests = 1;   // that head completed and the next one started
            w.tick(900);
            w.tick(1_800);
            assertEquals(false, keepAlive.expired, "the second head has been seen for 900 ms only");
            keepAlive.readingHead = false; // idle between requests: the idle timeout's business
            w.tick(5_000);
            assertEquals(false, keepAlive.expired);
            keepAlive.readingHead = true;
            w.tick(5_100);
            w.tick(6_099);
            assertEquals(false, keepAlive.expired, "timed from when the new head was first seen");
            w.tick(6_100);
            assertEquals(true, keepAlive.expired);
        } finally {
            w.stop();
        }
    }

    @Test
    void headerTimeoutMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> watch(0));
    }
}

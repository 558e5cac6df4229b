package kiln.db;

import java.time.Instant;

/** The database's wall clock, in microseconds since the epoch: commit times and expiries. */
final class Clock {
    private Clock() {
    }

    static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}

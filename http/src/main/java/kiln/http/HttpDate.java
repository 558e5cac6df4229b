package kiln.http;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * The {@code Date} response header value in IMF-fixdate form, e.g. {@code Sun, 06 Nov 1994 08:49:37 GMT}
 * (RFC 9110 section 5.6.7: two-digit day, 24-hour clock, always GMT). Formatted at most once per
 * second and shared; thread-safe without locks.
 */
public final class HttpDate {
    private static final DateTimeFormatter IMF_FIXDATE =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    /** Immutable pair of a second and its formatted value, swapped atomically as one reference. */
    private static final class Stamp {
        final long second;
        final String text;
        final byte[] ascii;

        Stamp(long second) {
            this.second = second;
            this.text = IMF_FIXDATE.format(Instant.ofEpochSecond(second));
            this.ascii = text.getBytes(StandardCharsets.US_ASCII);
        }
    }

    private static volatile Stamp current = new Stamp(System.currentTimeMillis() / 1000);

    private HttpDate() {
    }

    private static Stamp stamp(long epochMillis) {
        long second = epochMillis / 1000;
        Stamp s = current;
        if (s.second != second) {
            s = new Stamp(second);
            current = s;
        }
        return s;
    }

    /** @return the current date as an IMF-fixdate string (29 characters) */
    public static String now() {
        return stamp(System.currentTimeMillis()).text;
    }

    /** @return the current date as 29 US-ASCII bytes; do not modify the array */
    public static byte[] nowAscii() {
        return asciiAt(System.currentTimeMillis());
    }

    /**
     * @param epochMillis a time, ms since the epoch, e.g. a loop's clock ({@code kiln.server.LoopClock})
     * @return the date of that time as 29 US-ASCII bytes; do not modify the array
     */
    public static byte[] asciiAt(long epochMillis) {
        return stamp(epochMillis).ascii;
    }
}

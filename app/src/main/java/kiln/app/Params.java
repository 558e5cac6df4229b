package kiln.app;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/** Query-string rules shared by every front end. */
public final class Params {
    /** Most rows one /queries or /updates request may ask for (TechEmpower test types 3 and 5). */
    public static final int MAX_QUERIES = 500;
    /** Longest /hello delay accepted, in ms. */
    public static final int MAX_DELAY_MS = 60_000;

    private Params() {
    }

    /**
     * Finds one parameter in a raw query string ({@code a=1&b=2}, without the {@code ?}).
     *
     * @param rawQuery the query part of the request target, or null
     * @return the first value of {@code name}, percent-decoded as UTF-8 ("" for {@code name} alone),
     *         or null if absent
     * @throws HttpException 400 on a malformed percent-escape
     */
    public static String query(String rawQuery, String name) {
        if (rawQuery == null || rawQuery.isEmpty()) return null;
        int i = 0;
        int n = rawQuery.length();
        while (i <= n) {
            int amp = rawQuery.indexOf('&', i);
            if (amp < 0) amp = n;
            int eq = rawQuery.indexOf('=', i);
            int keyEnd = (eq >= 0 && eq < amp) ? eq : amp;
            if (keyEnd - i == name.length() && rawQuery.regionMatches(i, name, 0, name.length())) {
                String value = keyEnd == amp ? "" : rawQuery.substring(keyEnd + 1, amp);
                return value.indexOf('%') < 0 && value.indexOf('+') < 0 ? value : decode(value);
            }
            i = amp + 1;
        }
        return null;
    }

    private static String decode(String value) {
        try {
            return URLDecoder.decode(value, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new HttpException(400, "malformed query string: " + e.getMessage());
        }
    }

    /**
     * The {@code queries} rule of TechEmpower test types 3 and 5: an integer clamped to 1..500;
     * missing, empty or not an integer means 1.
     *
     * @param raw the decoded parameter value, or null when absent
     */
    public static int queries(String raw) {
        if (raw == null || raw.isEmpty()) return 1;
        long n;
        try {
            n = Long.parseLong(raw.trim());
        } catch (NumberFormatException e) {
            return 1;
        }
        return (int) Math.max(1, Math.min(MAX_QUERIES, n));
    }

    /**
     * The {@code {id}} of {@code /worlds/{id}}: a World id, 1..10000.
     *
     * @throws HttpException 404 when it is not an id the table has (the resource does not exist)
     */
    public static int worldId(String raw) {
        int id;
        try {
            id = Integer.parseInt(raw);
        } catch (NumberFormatException e) {
            throw new HttpException(404, "no World with id '" + raw + "'");
        }
        if (id < 1 || id > DemoDb.WORLD_ROWS) throw new HttpException(404, "no World with id " + id + "; ids are 1.." + DemoDb.WORLD_ROWS);
        return id;
    }

    /**
     * The {@code delay} of {@code /hello}: milliseconds to sleep, 0 (no sleep) when absent or empty.
     *
     * @param raw the decoded parameter value, or null when absent
     * @throws HttpException 400 when it is not an integer in 0..60000
     */
    public static int delayMs(String raw) {
        if (raw == null || raw.isEmpty()) return 0;
        int ms;
        try {
            ms = Integer.parseInt(raw.trim());
        } catch (NumberFormatException e) {
            throw new HttpException(400, "delay must be an integer number of milliseconds, got '" + raw + "'");
        }
        if (ms < 0 || ms > MAX_DELAY_MS) throw new HttpException(400, "delay must be 0.." + MAX_DELAY_MS + " ms, got " + ms);
        return ms;
    }
}

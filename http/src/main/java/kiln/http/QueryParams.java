package kiln.http;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/** The query string of a request target ({@code a=1&b=2}): parameters looked up by name (RFC 3986 section 3.4). */
public final class QueryParams {
    private QueryParams() {
    }

    /**
     * Finds one parameter in a raw query string ({@code a=1&b=2}, without the {@code ?}).
     *
     * @param rawQuery the query part of the request target, or null
     * @return the first value of {@code name}, percent-decoded as UTF-8 ("" for {@code name} alone),
     *         or null if absent
     * @throws HttpException 400 on a malformed percent-escape
     */
    public static String get(String rawQuery, String name) {
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

    /**
     * Reads an integer parameter, the way an endpoint's page size, offset or delay is read:
     * {@code QueryParams.intValue(rawQuery, "limit", 20, 1, 100)}. A value the client got wrong is
     * refused, not guessed at (a benchmark rule that clamps instead, like TechEmpower's
     * {@code queries}, is its own code).
     *
     * @param rawQuery     the query part of the request target, or null
     * @param name         the parameter, named in the 400
     * @param defaultValue the value when the parameter is absent or empty ({@code ?limit} or {@code ?limit=})
     * @param min          the smallest value accepted
     * @param max          the largest value accepted
     * @return the parameter's value, a decimal integer in {@code min..max}, or {@code defaultValue}
     * @throws HttpException            400 naming the parameter when it is not a decimal integer
     *                                  ({@code query parameter 'limit' must be an integer, got 'ten'}) or is
     *                                  outside the range ({@code query parameter 'limit' must be 1..100, got 500}),
     *                                  or on a malformed percent-escape
     * @throws IllegalArgumentException when {@code min > max}
     */
    public static int intValue(String rawQuery, String name, int defaultValue, int min, int max) {
        if (min > max) throw new IllegalArgumentException("min " + min + " > max " + max);
        String raw = get(rawQuery, name);
        if (raw == null || raw.isEmpty()) return defaultValue;
        if (!isDecimal(raw)) {
            throw new HttpException(400, "query parameter '" + name + "' must be an integer, got '" + shortened(raw) + "'");
        }
        long value;
        try {
            value = Long.parseLong(raw);
        } catch (NumberFormatException tooLong) {
            value = raw.charAt(0) == '-' ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        if (value < min || value > max) {
            throw new HttpException(400, "query parameter '" + name + "' must be " + range(min, max) + ", got " + shortened(raw));
        }
        return (int) value;
    }

    /** @return true for an optional sign and 1 or more ASCII digits (Integer.parseInt would also take other scripts' digits) */
    private static boolean isDecimal(String s) {
        int start = s.charAt(0) == '-' || s.charAt(0) == '+' ? 1 : 0;
        if (start == s.length()) return false;
        for (int i = start; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') return false;
        }
        return true;
    }

    private static String range(int min, int max) {
        if (max == Integer.MAX_VALUE && min != Integer.MIN_VALUE) return "an integer >= " + min;
        if (min == Integer.MIN_VALUE && max != Integer.MAX_VALUE) return "an integer <= " + max;
        return min + ".." + max;
    }

    /** A client's value as echoed in a 400 (or a path parameter's in a 404): at most 40 characters. */
    static String shortened(String raw) {
        return raw.length() <= 40 ? raw : raw.substring(0, 40) + "...";
    }

    private static String decode(String value) {
        try {
            return URLDecoder.decode(value, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new HttpException(400, "malformed query string: " + e.getMessage());
        }
    }
}

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

    private static String decode(String value) {
        try {
            return URLDecoder.decode(value, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new HttpException(400, "malformed query string: " + e.getMessage());
        }
    }
}

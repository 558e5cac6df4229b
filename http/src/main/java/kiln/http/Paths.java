package kiln.http;

import java.util.ArrayList;
import java.util.List;

/**
 * A request path in its normal form, so that every front end routes equivalent paths alike
 * (RFC 3986 section 6.2.2, syntax-based normalisation, which RFC 9110 section 4.2.3 applies to
 * http URIs):
 * <ul>
 *   <li>a percent-encoded unreserved character is decoded ({@code /%70laintext} is
 *       {@code /plaintext}, section 6.2.2.2); other percent-encodings stay encoded, hex digits
 *       upper-cased (section 6.2.2.1), so {@code %2F} is never a segment separator;</li>
 *   <li>dot-segments are removed (sections 5.2.4, 6.2.2.3): {@code /./plaintext} and
 *       {@code /a/../plaintext} are {@code /plaintext};</li>
 *   <li>empty segments are kept: {@code //plaintext} is another path than {@code /plaintext}.</li>
 * </ul>
 * Refused with 400: a {@code %} not followed by two hex digits (not a URI, RFC 3986 section 2.1),
 * and a {@code ..} that would climb above the root ({@code /../plaintext}), which RFC 3986's
 * algorithm silently drops but which only a path-traversal probe sends; Jetty and nginx refuse it too.
 */
public final class Paths {
    private Paths() {
    }

    /**
     * @param path the path of a request target as sent, starting with '/', without the query; or
     *             {@code *} (the asterisk-form of {@code OPTIONS *}), returned as it is
     * @return the normal form; {@code path} itself when it is already normal
     * @throws HttpException 400 on malformed percent-encoding or a {@code ..} above the root
     */
    public static String normalize(String path) {
        // Fast path: nothing to decode and no segment that starts with a dot.
        if (path.indexOf('%') < 0 && path.indexOf("/.") < 0) return path;
        String decoded = decodeUnreserved(path);
        if (decoded.indexOf("/.") < 0) return decoded;
        return removeDotSegments(decoded);
    }

    private static String decodeUnreserved(String path) {
        if (path.indexOf('%') < 0) return path;
        StringBuilder out = new StringBuilder(path.length());
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c != '%') {
                out.append(c);
                continue;
            }
            int hi = i + 2 < path.length() ? Character.digit(path.charAt(i + 1), 16) : -1;
            int lo = hi >= 0 ? Character.digit(path.charAt(i + 2), 16) : -1;
            if (lo < 0) throw new HttpException(400, "malformed percent-encoding in the path (RFC 3986 section 2.1)");
            char octet = (char) (hi * 16 + lo);
            if (isUnreserved(octet)) {
                out.append(octet);
            } else {
                out.append('%').append(Character.toUpperCase(path.charAt(i + 1))).append(Character.toUpperCase(path.charAt(i + 2)));
            }
            i += 2;
        }
        return out.toString();
    }

    /** RFC 3986 section 2.3: ALPHA / DIGIT / "-" / "." / "_" / "~" */
    private static boolean isUnreserved(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    }

    /** RFC 3986 section 5.2.4 on a path starting with '/', segment by segment; a trailing dot-segment leaves a trailing '/'. */
    private static String removeDotSegments(String path) {
        String[] segments = path.substring(1).split("/", -1);
        List<String> out = new ArrayList<>(segments.length);
        for (int i = 0; i < segments.length; i++) {
            String s = segments[i];
            boolean last = i == segments.length - 1;
            if (s.equals(".")) {
                if (last) out.add("");
            } else if (s.equals("..")) {
                if (out.isEmpty()) throw new HttpException(400, "the path climbs above the root with '..'");
                out.remove(out.size() - 1);
                if (last) out.add("");
            } else {
                out.add(s);
            }
        }
        return "/" + String.join("/", out);
    }
}

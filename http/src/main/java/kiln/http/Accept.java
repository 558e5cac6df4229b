package kiln.http;

import java.util.Locale;

/**
 * Reads an {@code Accept} field value for the one choice kiln makes with it: an error response as JSON
 * problem details or as plain text ({@link Response#negotiated}). Proactive negotiation per RFC 9110
 * section 12.5.1: each media range has a weight ({@code q}, 0..1, default 1), and for a media type
 * the most specific range that matches it applies ({@code text/plain} over {@code text/*} over
 * {@code *}{@code /*}); a type no range matches is not acceptable.
 */
public final class Accept {
    /** How specific a range that matched is: none, {@code *}{@code /*}, {@code type/*}, {@code type/subtype}. */
    private static final int NONE = 0;
    private static final int ANY = 1;
    private static final int TYPE = 2;
    private static final int EXACT = 3;

    private Accept() {
    }

    /**
     * @param accept an {@code Accept} field value, e.g. {@code application/json} or
     *               {@code text/html,application/xml;q=0.9,*}{@code /*;q=0.8}; null when the
     *               request has none
     * @return true when the client weighs {@code application/problem+json} or
     *         {@code application/json} above {@code text/plain}, or equally but through a more
     *         specific range ({@code application/json, *}{@code /*}); false for no {@code Accept},
     *         {@code *}{@code /*} alone (curl's), a browser's, or a tie: plain text is the default
     */
    public static boolean prefersJson(String accept) {
        if (accept == null || accept.isEmpty()) return false;
        int[] problem = weigh(accept, "application", "problem+json");
        int[] json = weigh(accept, "application", "json");
        int[] best = better(problem, json) ? problem : json;
        int[] text = weigh(accept, "text", "plain");
        return best[0] > 0 && better(best, text);
    }

    /** @return true when weight-and-specificity {@code a} beats {@code b}: a higher q, or the same q from a more specific range */
    private static boolean better(int[] a, int[] b) {
        return a[0] > b[0] || (a[0] == b[0] && a[1] > b[1]);
    }

    /**
     * @return {q in thousandths, specificity} of the most specific range of {@code accept} that
     *         matches {@code type/subtype}; {0, NONE} when none does
     */
    private static int[] weigh(String accept, String type, String subtype) {
        int q = 0;
        int specificity = NONE;
        int start = 0;
        while (start <= accept.length()) {
            int end = accept.indexOf(',', start);
            if (end < 0) end = accept.length();
            String range = accept.substring(start, end);
            start = end + 1;
            int semi = range.indexOf(';');
            String media = (semi < 0 ? range : range.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
            int slash = media.indexOf('/');
            if (slash < 0) continue;
            String t = media.substring(0, slash).trim();
            String s = media.substring(slash + 1).trim();
            int match;
            if (t.equals(type) && s.equals(subtype)) {
                match = EXACT;
            } else if (t.equals(type) && s.equals("*")) {
                match = TYPE;
            } else if (t.equals("*") && s.equals("*")) {
                match = ANY;
            } else {
                continue;
            }
            int weight = semi < 0 ? 1000 : weight(range.substring(semi + 1));
            if (weight < 0 || match < specificity) continue;
            if (match > specificity) {
                specificity = match;
                q = weight;
            } else {
                q = Math.max(q, weight);
            }
        }
        return new int[] {q, specificity};
    }

    /** @return the {@code q} parameter among {@code params} in thousandths (1000 when absent), or -1 when it is malformed */
    private static int weight(String params) {
        for (String p : params.split(";")) {
            int eq = p.indexOf('=');
            if (eq < 0 || !p.substring(0, eq).trim().equalsIgnoreCase("q")) continue;
            String v = p.substring(eq + 1).trim();
            // qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) (RFC 9110 section 12.4.2)
            if (!v.matches("0(\\.[0-9]{0,3})?|1(\\.0{0,3})?")) return -1;
            if (v.startsWith("1")) return 1000;
            String digits = v.length() > 2 ? v.substring(2) : "";
            return digits.isEmpty() ? 0 : Integer.parseInt((digits + "00").substring(0, 3));
        }
        return 1000;
    }
}

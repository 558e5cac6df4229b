package kiln.conformance;

import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One HTTP/1.x response exactly as it came off the wire: the head's bytes, its parsed parts, the body. */
final class RawResponse {
    private static final Pattern STATUS_LINE = Pattern.compile("(HTTP/\\d\\.\\d) (\\d{3}) (.*)");
    private static final Pattern DATE_LINE = Pattern.compile("\r\nDate: [^\r]*\r\n");
    /** Replaces the Date value in {@link #headWithoutDate}. */
    static final String DATE_PLACEHOLDER = "<date>";

    /** Status line and header lines, each ending in CRLF, and the empty line: ISO-8859-1 decoded bytes. */
    final String head;
    final String statusLine;
    final int status;
    /** Header fields in wire order, names as sent. */
    final List<Map.Entry<String, String>> headers;
    final byte[] body;

    RawResponse(String head, byte[] body) {
        this.head = head;
        this.body = body;
        String[] lines = head.substring(0, head.length() - 4).split("\r\n", -1);
        this.statusLine = lines[0];
        Matcher m = STATUS_LINE.matcher(statusLine);
        if (!m.matches()) throw new AssertionError("malformed status line: " + statusLine);
        this.status = Integer.parseInt(m.group(2));
        List<Map.Entry<String, String>> fields = new ArrayList<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon <= 0) throw new AssertionError("malformed header line '" + lines[i] + "' in\n" + head);
            fields.add(new AbstractMap.SimpleImmutableEntry<>(lines[i].substring(0, colon), lines[i].substring(colon + 1).trim()));
        }
        this.headers = Collections.unmodifiableList(fields);
    }

    /** @return the value of the first field named {@code name} (case-insensitive), or null */
    String header(String name) {
        for (Map.Entry<String, String> h : headers) {
            if (h.getKey().equalsIgnoreCase(name)) return h.getValue();
        }
        return null;
    }

    /** @return the field names in wire order, as spelled on the wire */
    List<String> headerNames() {
        List<String> names = new ArrayList<>(headers.size());
        for (Map.Entry<String, String> h : headers) names.add(h.getKey());
        return names;
    }

    /** @return the body decoded as UTF-8 */
    String bodyText() {
        return new String(body, StandardCharsets.UTF_8);
    }

    /** @return {@link #head} with the Date value replaced by {@link #DATE_PLACEHOLDER}: equal for equal responses */
    String headWithoutDate() {
        return DATE_LINE.matcher(head).replaceFirst("\r\nDate: " + DATE_PLACEHOLDER + "\r\n");
    }

    /** @return the header lines of {@link #headWithoutDate} as sent ("Name: value"), in wire order */
    List<String> fieldLinesWithoutDate() {
        String h = headWithoutDate();
        String[] lines = h.substring(0, h.length() - 4).split("\r\n", -1);
        return List.of(lines).subList(1, lines.length);
    }

    @Override
    public String toString() {
        return head + (body.length <= 400 ? bodyText() : bodyText().substring(0, 400) + "...");
    }
}

package kiln.app;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.owasp.encoder.Encode;

/**
 * Response bodies of the endpoints, identical for every front end. JSON is written by Jackson, HTML
 * escaping by the OWASP Java Encoder.
 */
public final class Bodies {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** {@code GET /plaintext}: TechEmpower test type 6. */
    public static final byte[] PLAINTEXT = "Hello, World!".getBytes(StandardCharsets.US_ASCII);

    /** {@code GET /hello}: the original study's 10-byte async body. */
    public static final byte[] HELLO = "HelloWorld".getBytes(StandardCharsets.US_ASCII);

    /** The row added at request time by the fortunes test. */
    public static final String ADDED_FORTUNE = "Additional fortune added at request time.";

    private Bodies() {
    }

    /** The {@code /json} message object; serialized per request, as the json test requires. */
    public static final class Message {
        public final String message;

        public Message(String message) {
            this.message = message;
        }
    }

    /** @return {@code {"message":"Hello, World!"}}, freshly serialized */
    public static byte[] helloJson() {
        return json(new Message("Hello, World!"));
    }

    /** @return {@code value} as UTF-8 JSON */
    public static byte[] json(Object value) {
        try {
            return JSON.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot serialize " + value.getClass().getName() + " as JSON", e);
        }
    }

    /**
     * Renders the fortunes page: the rows from the database plus {@link #ADDED_FORTUNE} (id 0),
     * sorted by message, every message HTML-escaped.
     *
     * @param fromDb the fortune table's rows; not modified
     * @return UTF-8 HTML
     */
    public static byte[] fortunesHtml(List<Fortune> fromDb) {
        List<Fortune> all = new ArrayList<>(fromDb.size() + 1);
        all.addAll(fromDb);
        all.add(new Fortune(0, ADDED_FORTUNE));
        Collections.sort(all);
        StringBuilder html = new StringBuilder(1400);
        html.append("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
            + "<tr><th>id</th><th>message</th></tr>");
        for (Fortune f : all) {
            html.append("<tr><td>").append(f.id).append("</td><td>");
            html.append(Encode.forHtml(f.message));
            html.append("</td></tr>");
        }
        html.append("</table></body></html>");
        return html.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** {@code GET /}: a small page that links every endpoint. */
    public static final byte[] INDEX = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>kiln</title></head><body>"
        + "<h1>kiln</h1><p>A fiber-based async database demo server. Endpoints (TechEmpower test types):</p><ul>"
        + "<li><a href=\"/plaintext\">/plaintext</a> &mdash; Hello, World! as text</li>"
        + "<li><a href=\"/json\">/json</a> &mdash; a JSON message</li>"
        + "<li><a href=\"/db\">/db</a> &mdash; one random World row</li>"
        + "<li><a href=\"/queries?queries=20\">/queries?queries=N</a> &mdash; N random rows (1..500)</li>"
        + "<li><a href=\"/updates?queries=20\">/updates?queries=N</a> &mdash; N rows updated durably</li>"
        + "<li><a href=\"/fortunes\">/fortunes</a> &mdash; the fortunes table as HTML</li>"
        + "<li><a href=\"/hello?delay=100\">/hello?delay=MS</a> &mdash; HelloWorld after an asynchronous sleep</li>"
        + "</ul></body></html>").getBytes(StandardCharsets.UTF_8);

    /** @return a short plain-text error body ending in a newline, e.g. {@code "404 Not Found\n"} */
    public static byte[] error(int status, String reason, String detail) {
        String text = status + " " + reason + (detail == null || detail.isEmpty() ? "" : ": " + detail) + "\n";
        return text.getBytes(StandardCharsets.UTF_8);
    }
}

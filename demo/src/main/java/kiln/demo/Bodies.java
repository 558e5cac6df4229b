package kiln.demo;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import kiln.http.Json;
import org.owasp.encoder.Encode;

/**
 * Response bodies of the demo endpoints, identical for every front end. JSON is written by Jackson
 * ({@link Json}), HTML escaping by the OWASP Java Encoder.
 */
public final class Bodies {
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

    /** @return the {@code /live} page (UTF-8 HTML, the resource {@code kiln/demo/live.html}): a table fed by {@code /updates/events} */
    public static byte[] livePage() {
        try (InputStream in = Bodies.class.getResourceAsStream("live.html")) {
            if (in == null) throw new IllegalStateException("resource kiln/demo/live.html is missing from the demo's jar");
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading kiln/demo/live.html", e);
        }
    }

    /** @return {@code {"message":"Hello, World!"}}, freshly serialized */
    public static byte[] helloJson() {
        return Json.write(new Message("Hello, World!"));
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
}

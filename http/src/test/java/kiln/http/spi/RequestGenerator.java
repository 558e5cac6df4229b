package kiln.http.spi;

import static kiln.http.spi.ParserChecks.concat;
import static kiln.http.spi.ParserChecks.escape;
import static kiln.http.spi.ParserChecks.latin1;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import kiln.http.HttpException;
import kiln.http.Paths;
import kiln.http.Request;


/**
 * Valid HTTP/1.x requests (RFC 9112 grammar, within {@link RequestParser}'s limits) drawn from a
 * {@link Random}, each with what the parser must make of it: request line, header fields with
 * optional whitespace and obs-text, Content-Length or chunked bodies with extensions and trailers,
 * leading empty lines, origin- and absolute-form targets. The same seed gives the same request.
 */
final class RequestGenerator {

    static final String TCHAR = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    static final String CRLF = "\r\n";

    private static final String[] METHODS = {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"};
    private static final String[] OWS = {"", "", " ", "\t", "  ", " \t "};
    private static final Set<String> FRAMING_NAMES = Set.of("host", "content-length", "transfer-encoding", "connection");

    /** Visible ASCII, {@code '!'..'~'}. */
    private static final String VCHAR = range('!', '~');

    private RequestGenerator() {
    }

    // ------------------------------------------------------------------------------------------
    // What is generated

    /** One header field: its name, the value as sent (with optional whitespace), the value as parsed. */
    static final class Field {
        final String name;
        final String sent;
        final String value;

        Field(String name, String sent, String value) {
            this.name = name;
            this.sent = sent;
            this.value = value;
        }

        String line() {
            return name + ":" + sent + CRLF;
        }
    }

    /** A valid request and what the parser must make of it. */
    static final class Generated {
        final String line;  // leading empty lines and the request line, CRLF included
        final String method;
        final String target;
        final String path;
        final String rawQuery;
        final int minor;
        final List<Field> fields;
        final byte[] payload;  // the body as sent (chunked or not)
        final byte[] body;     // the body as parsed

        Generated(String leading, String method, Target target, int minor, List<Field> fields, byte[] payload, byte[] body) {
            this.line = leading + method + " " + target.target + " HTTP/1." + minor + CRLF;
            this.method = method;
            this.target = target.target;
            this.path = target.path;
            this.rawQuery = target.query;
            this.minor = minor;
            this.fields = List.copyOf(fields);
            this.payload = payload;
            this.body = body;
        }

        byte[] bytes() {
            return assemble(line, fields, payload);
        }

        void assertMatches(Request r) {
            assertEquals(method, r.method());
            assertEquals(target, r.target());
            assertEquals(path, r.path());
            assertEquals(rawQuery, r.rawQuery());
            assertEquals(minor, r.minorVersion());
            Map<String, String> first = new LinkedHashMap<>();
            for (Field f : fields) first.putIfAbsent(f.name.toLowerCase(Locale.ROOT), f.value);
            for (Map.Entry<String, String> e : first.entrySet()) assertEquals(e.getValue(), r.header(e.getKey()), "header " + e.getKey());
            assertArrayEquals(body, r.body());
        }

        @Override
        public String toString() {
            return escape(bytes());
        }
    }

    /** A request-target and the path and query the parser must route by. */
    static final class Target {
        final String target;
        final String path;
        final String query;

        Target(String target, String path, String query) {
            this.target = target;
            this.path = path;
            this.query = query;
        }
    }

    /** How the body is framed: its header field (or null), the bytes as sent and as parsed. */
    static final class Framing {
        final Field field;
        final byte[] payload;
        final byte[] body;

        Framing(Field field, byte[] payload, byte[] body) {
            this.field = field;
            this.payload = payload;
            this.body = body;
        }
    }

    // ------------------------------------------------------------------------------------------
    // Generators

    /** A whole valid request: HTTP/1.1 with one Host, HTTP/1.0 with or without; no body, Content-Length or chunked. */
    static Generated request(Random r) {
        int l = r.nextInt(10);
        String leading = l < 8 ? "" : l == 8 ? CRLF : CRLF + CRLF;
        String method = method(r);
        Target target = target(r);
        int minor = r.nextInt(2);
        List<Field> fields = new ArrayList<>();
        for (int i = r.nextInt(9); i > 0; i--) fields.add(extraField(r));
        if (minor == 1 || r.nextBoolean()) {
            String host = hostName(r);
            fields.add(Math.min(r.nextInt(9), fields.size()), new Field(pick(r, "Host", "host", "HOST"), ows(r) + host + ows(r), host));
        }
        Framing f = framing(r);
        if (minor == 0 && f.field != null && f.field.name.equalsIgnoreCase("transfer-encoding")) {
            // chunked is HTTP/1.1 only; send the same body with a Content-Length instead
            f = new Framing(new Field("Content-Length", " " + f.body.length, Integer.toString(f.body.length)), f.body, f.body);
        }
        if (f.field != null) fields.add(Math.min(r.nextInt(9), fields.size()), f.field);
        return new Generated(leading, method, target, minor, fields, f.payload, f.body);
    }

    static String method(Random r) {
        return r.nextBoolean() ? pick(r, METHODS) : token(r, 10);
    }

    static String token(Random r, int maxLength) {
        return string(r, TCHAR, 1, maxLength);
    }

    static String ows(Random r) {
        return pick(r, OWS);
    }

    private static String hostName(Random r) {
        String name = string(r, range('a', 'z') + range('0', '9') + ".-", 1, 20);
        return r.nextInt(10) < 7 ? name : name + ":" + (1 + r.nextInt(65535));
    }

    /** origin-form {@code /path?query}, or one time in ten absolute-form {@code http://host/path?query}. */
    private static Target target(Random r) {
        String segment = pathPart(r);
        String query = r.nextBoolean() ? null : string(r, VCHAR.replace("#", ""), 0, 30);
        String q = query == null ? "" : "?" + query;
        if (r.nextInt(10) != 0) return new Target("/" + segment + q, Paths.normalize("/" + segment), query);
        String p = r.nextInt(10) < 3 ? null : segment;
        return new Target(pick(r, "http://", "HTTP://", "https://") + hostName(r) + (p == null ? "" : "/" + p) + q,
            p == null ? "/" : Paths.normalize("/" + p), query);
    }

    /**
     * Visible ASCII after the first '/', sometimes with a percent-encoded octet; dot-segments may
     * occur (the parser routes on the normal form), but none that climbs above the root (400).
     */
    private static String pathPart(Random r) {
        while (true) {
            String part = string(r, VCHAR.replace("?", "").replace("#", "").replace("%", ""), 0, 30);
            if (r.nextInt(4) == 0) {
                int at = r.nextInt(part.length() + 1);
                part = part.substring(0, at) + String.format("%%%02x", r.nextInt(256)) + part.substring(at);
            }
            try {
                Paths.normalize("/" + part);
                return part;
            } catch (HttpException e) {
                // "/.." and friends: try another
            }
        }
    }

    /** A header field that does not change framing, Host or keep-alive, with a value of visible ASCII, obs-text and inner whitespace. */
    static Field extraField(Random r) {
        String name;
        do {
            name = token(r, 12);
        } while (FRAMING_NAMES.contains(name.toLowerCase(Locale.ROOT)));
        String value = string(r, VCHAR + " \t" + range('\u0080', '\u00ff'), 0, 40);
        return new Field(name, ows(r) + value + ows(r), strip(value));
    }

    private static Framing framing(Random r) {
        switch (r.nextInt(3)) {
            case 0:
                return new Framing(null, new byte[0], new byte[0]);
            case 1: {
                byte[] body = bytes(r, 0, 200);
                String sent = ows(r) + body.length + ows(r);
                return new Framing(new Field(pick(r, "Content-Length", "content-length", "CONTENT-LENGTH"), sent,
                    Integer.toString(body.length)), body, body);
            }
            default: {
                String coding = pick(r, "chunked", "Chunked", "CHUNKED");
                Field field = new Field(pick(r, "Transfer-Encoding", "transfer-encoding"), ows(r) + coding + ows(r), coding);
                return chunked(r, field);
            }
        }
    }

    /** Up to 4 chunks of 1..64 bytes (size in hex with up to 11 leading zeros, either case, extensions), a last chunk, trailers. */
    private static Framing chunked(Random r, Field field) {
        ByteArrayOutputStream sent = new ByteArrayOutputStream();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (int n = r.nextInt(5); n > 0; n--) {
            byte[] data = bytes(r, 1, 64);
            String hex = Integer.toHexString(data.length);
            sent.writeBytes(latin1("0".repeat(r.nextInt(12)) + (r.nextBoolean() ? hex.toUpperCase(Locale.ROOT) : hex) + chunkExtension(r) + CRLF));
            sent.writeBytes(data);
            sent.writeBytes(latin1(CRLF));
            body.writeBytes(data);
        }
        sent.writeBytes(latin1("0".repeat(1 + r.nextInt(12)) + chunkExtension(r) + CRLF));
        for (int n = r.nextInt(3); n > 0; n--) sent.writeBytes(latin1(extraField(r).line()));
        sent.writeBytes(latin1(CRLF));
        return new Framing(field, sent.toByteArray(), body.toByteArray());
    }

    /** Zero to two {@code ;name}, {@code ;name=token} or {@code ;name="quoted"}, with optional whitespace (BWS) around ; and =. */
    private static String chunkExtension(Random r) {
        StringBuilder s = new StringBuilder();
        for (int n = r.nextInt(3); n > 0; n--) {
            s.append(ows(r)).append(';').append(ows(r)).append(token(r, 8));
            switch (r.nextInt(3)) {
                case 0 -> { }
                case 1 -> s.append(ows(r)).append('=').append(ows(r)).append(token(r, 8));
                default -> s.append(ows(r)).append("=").append(ows(r)).append('"')
                    .append(string(r, VCHAR.replace("\"", "").replace("\\", "") + " \t", 0, 10)).append('"');
            }
        }
        return s.toString();
    }

    /** Content-Length values, valid or not, for the CL+TE property. */
    static String contentLengthValue(Random r) {
        return switch (r.nextInt(3)) {
            case 0 -> String.valueOf(r.nextInt(2 * RequestParser.MAX_BODY + 1));
            case 1 -> pick(r, "", "-1", "1x", "99999999999999999999", "0, 0", " 5 ");
            default -> token(r, 6);
        };
    }

    /** Transfer-Encoding values, supported or not, for the CL+TE property. */
    static String transferCoding(Random r) {
        return r.nextBoolean() ? pick(r, "chunked", "CHUNKED", "gzip, chunked", "identity", "chunked, chunked", "") : token(r, 10);
    }

    // ------------------------------------------------------------------------------------------
    // Helpers

    static byte[] assemble(String line, List<Field> fields, byte[] payload) {
        StringBuilder head = new StringBuilder(line);
        for (Field f : fields) head.append(f.line());
        return concat(latin1(head.append(CRLF).toString()), payload);
    }

    @SafeVarargs
    static <T> T pick(Random r, T... choices) {
        return choices[r.nextInt(choices.length)];
    }

    /** {@code min..max} characters (inclusive) drawn from {@code alphabet}. */
    static String string(Random r, String alphabet, int min, int max) {
        int n = min + r.nextInt(max - min + 1);
        StringBuilder s = new StringBuilder(n);
        for (int i = 0; i < n; i++) s.append(alphabet.charAt(r.nextInt(alphabet.length())));
        return s.toString();
    }

    private static byte[] bytes(Random r, int min, int max) {
        byte[] b = new byte[min + r.nextInt(max - min + 1)];
        r.nextBytes(b);
        return b;
    }

    private static String range(char from, char to) {
        StringBuilder s = new StringBuilder();
        for (char c = from; c <= to; c++) s.append(c);
        return s.toString();
    }

    private static String strip(String v) {
        int s = 0;
        int e = v.length();
        while (s < e && (v.charAt(s) == ' ' || v.charAt(s) == '\t')) s++;
        while (e > s && (v.charAt(e - 1) == ' ' || v.charAt(e - 1) == '\t')) e--;
        return v.substring(s, e);
    }
}

package kiln.tools;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import kiln.db.Tuple;

/**
 * Keys and values as a person reads and types them, without the app's codecs: the tool guesses
 * what bytes are from how they look, and a key printed is a key that can be typed back.
 *
 * <p>The forms, tried in this order for a key:
 * <ul>
 *   <li>{@code "ada@example.org"}: UTF-8 text without control characters (kiln's {@code Codec.STRING}),
 *       as a JSON string; typed also as {@code str:ada@example.org}</li>
 *   <li>{@code ("lobby", 3)}: a FoundationDB tuple ({@code Codec.TUPLE}); elements are JSON strings,
 *       integers, {@code null}, {@code true}, {@code false}, {@code 0x...} byte strings, nested
 *       tuples, {@code uuid:...} and {@code instant:...}</li>
 *   <li>{@code int:42} and {@code long:42}: 4 and 8 bytes in kiln's {@code Codec.INT} and
 *       {@code Codec.LONG} (big-endian, the sign bit flipped)</li>
 *   <li>{@code 0x8000002a}: anything else, in hex ({@code 0x} alone: no bytes)</li>
 * </ul>
 * A value is JSON first (one JSON document, printed on one line: {@code Codec.json}), then the
 * same forms but the tuple.
 */
final class Literal {
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final HexFormat HEX = HexFormat.of();

    private Literal() {
    }

    /** @return the key's form (see the class comment) */
    static String key(byte[] key) {
        String text = text(key);
        if (text != null) return quote(text);
        Tuple t = tuple(key);
        if (t != null) return tuple(t);
        return number(key);
    }

    /** @return the value's form: JSON, text, a number or hex (see the class comment) */
    static String value(byte[] value) {
        String json = json(value);
        if (json != null) return json;
        String text = text(value);
        if (text != null) return quote(text);
        return number(value);
    }

    /** @return {@code int:N}, {@code long:N} for 4 and 8 bytes, else {@code 0x} and the hex */
    private static String number(byte[] b) {
        if (b.length == Integer.BYTES) return "int:" + (ByteBuffer.wrap(b).getInt() ^ Integer.MIN_VALUE);
        if (b.length == Long.BYTES) return "long:" + (ByteBuffer.wrap(b).getLong() ^ Long.MIN_VALUE);
        return hex(b);
    }

    static String hex(byte[] b) {
        return "0x" + HEX.formatHex(b);
    }

    /** @return the bytes as text when they are UTF-8 with no control character, else null */
    static String text(byte[] b) {
        if (b.length == 0) return null;
        CharBuffer chars;
        try {
            chars = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b));
        } catch (CharacterCodingException e) {
            return null;
        }
        for (int i = 0; i < chars.length(); i++) {
            char c = chars.charAt(i);
            if (c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0)) return null;
        }
        return chars.toString();
    }

    /** @return the bytes as a tuple when they are exactly a whole one's encoding (it packs back to them), else null */
    static Tuple tuple(byte[] b) {
        if (b.length == 0) return null;
        try {
            Tuple t = Tuple.unpack(b);
            return java.util.Arrays.equals(t.pack(), b) ? t : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** @return the bytes as one line of JSON when they are one JSON document, else null */
    static String json(byte[] b) {
        if (b.length == 0) return null;
        int first = b[0] & 0xFF;
        if (first != '{' && first != '[' && first != '"' && first != '-' && !(first >= '0' && first <= '9')
                && first != 't' && first != 'f' && first != 'n') {
            return null;
        }
        try {
            JsonNode node = JSON.readTree(b);
            return node == null || node.isMissingNode() ? null : JSON.writeValueAsString(node);
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }

    /** @return the bytes as a JSON tree when they are one JSON document, else null */
    static JsonNode jsonTree(byte[] b) {
        String json = json(b);
        try {
            return json == null ? null : JSON.readTree(json);
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    /** @return {@code s} as a JSON string */
    static String quote(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** @return {@code ("lobby", 3)} */
    static String tuple(Tuple t) {
        StringBuilder b = new StringBuilder("(");
        List<Object> items = t.items();
        for (int i = 0; i < items.size(); i++) {
            if (i > 0) b.append(", ");
            Object e = items.get(i);
            if (e == null) b.append("null");
            else if (e instanceof String s) b.append(quote(s));
            else if (e instanceof byte[] bytes) b.append(hex(bytes));
            else if (e instanceof Tuple nested) b.append(tuple(nested));
            else if (e instanceof UUID u) b.append("uuid:").append(u);
            else if (e instanceof Instant at) b.append("instant:").append(at);
            else b.append(e);  // Long, Boolean
        }
        return b.append(')').toString();
    }

    /**
     * Reads a key typed in one of the forms of the class comment.
     *
     * @throws IllegalArgumentException saying which forms there are
     */
    static byte[] parse(String s) {
        String t = s.strip();
        try {
            if (t.startsWith("(")) {
                Parser p = new Parser(t);
                Tuple tuple = p.tuple();
                p.end();
                return tuple.pack();
            }
            if (t.startsWith("\"")) {
                Parser p = new Parser(t);
                String text = p.string();
                p.end();
                return text.getBytes(StandardCharsets.UTF_8);
            }
            if (t.startsWith("str:")) return t.substring(4).getBytes(StandardCharsets.UTF_8);
            if (t.startsWith("int:")) return ByteBuffer.allocate(4).putInt(Integer.parseInt(t.substring(4)) ^ Integer.MIN_VALUE).array();
            if (t.startsWith("long:")) return ByteBuffer.allocate(8).putLong(Long.parseLong(t.substring(5)) ^ Long.MIN_VALUE).array();
            if (t.startsWith("0x")) return HEX.parseHex(t.substring(2));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("'" + s + "' is not a key: " + e.getMessage() + " (" + FORMS + ")", e);
        }
        throw new IllegalArgumentException("'" + s + "' is not a key (" + FORMS + ")");
    }

    /** The forms a key is typed in, for messages. */
    static final String FORMS = "a key is \"text\" or str:text, a tuple (\"lobby\", 3), int:42, long:42 or hex 0x0102";

    /** A recursive-descent reader of tuples and JSON strings. */
    private static final class Parser {
        private final String s;
        private int at;

        Parser(String s) {
            this.s = s;
        }

        void end() {
            skipSpaces();
            if (at != s.length()) throw new IllegalArgumentException("unexpected '" + s.substring(at) + "'");
        }

        private void skipSpaces() {
            while (at < s.length() && Character.isWhitespace(s.charAt(at))) at++;
        }

        Tuple tuple() {
            skipSpaces();
            expect('(');
            List<Object> items = new ArrayList<>();
            skipSpaces();
            if (peek() == ')') {
                at++;
                return Tuple.from(items);
            }
            while (true) {
                items.add(element());
                skipSpaces();
                char c = next();
                if (c == ')') return Tuple.from(items);
                if (c != ',') throw new IllegalArgumentException("expected ',' or ')' at " + (at - 1));
            }
        }

        private Object element() {
            skipSpaces();
            char c = peek();
            if (c == '(') return tuple();
            if (c == '"') return string();
            String word = word();
            if (word.equals("null")) return null;
            if (word.equals("true")) return Boolean.TRUE;
            if (word.equals("false")) return Boolean.FALSE;
            if (word.startsWith("0x")) return HEX.parseHex(word.substring(2));
            if (word.startsWith("uuid:")) return UUID.fromString(word.substring(5));
            if (word.startsWith("instant:")) return Instant.parse(word.substring(8));
            try {
                return Long.parseLong(word);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("'" + word + "' is no tuple element (\"text\", 42, null, true, false, 0x0102, (...),"
                    + " uuid:..., instant:...)");
            }
        }

        /** @return the characters up to the next ',', ')' or space */
        private String word() {
            int from = at;
            while (at < s.length() && s.charAt(at) != ',' && s.charAt(at) != ')' && !Character.isWhitespace(s.charAt(at))) at++;
            if (from == at) throw new IllegalArgumentException("a tuple element is missing at " + from);
            return s.substring(from, at);
        }

        /** @return a JSON string's text, from its opening quote */
        String string() {
            int from = at;
            expect('"');
            while (at < s.length() && s.charAt(at) != '"') {
                if (s.charAt(at) == '\\') at++;
                at++;
            }
            expect('"');
            try {
                return JSON.readValue(s.substring(from, at), String.class);
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException("bad string " + s.substring(from, at) + ": " + e.getOriginalMessage());
            }
        }

        private char peek() {
            if (at >= s.length()) throw new IllegalArgumentException("it ends too soon");
            return s.charAt(at);
        }

        private char next() {
            char c = peek();
            at++;
            return c;
        }

        private void expect(char c) {
            if (next() != c) throw new IllegalArgumentException("expected '" + c + "' at " + (at - 1));
        }
    }
}

package kiln.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

/** A body that does not bind is a 400 that names the field and the JSON types, never the handler's Java class. */
class JsonTest {
    /** A handler's body type, as an app writes one. */
    public static final class Order {
        public String customer;
        public boolean paid;
        public List<Line> lines;
        public Size size;
    }

    public static final class Line {
        public String item;
        public int qty;
    }

    public enum Size { SMALL, LARGE }

    /** No creator Jackson can use: a server bug, not the client's. */
    public static final class Unbindable {
        private Unbindable(int x) {
        }
    }

    private static String refusal(String json) {
        HttpException e = assertThrows(HttpException.class, () -> Json.read(json.getBytes(StandardCharsets.UTF_8), Order.class), json);
        assertEquals(400, e.status());
        assertFalse(e.getMessage().contains("JsonTest") || e.getMessage().contains("kiln.") || e.getMessage().contains("Order"),
            "no Java class in: " + e.getMessage());
        return e.getMessage();
    }

    @Test
    void aWellFormedBodyBinds() {
        Order o = Json.read("{\"customer\":\"ann\",\"paid\":true,\"lines\":[{\"item\":\"tea\",\"qty\":2}],\"size\":\"LARGE\"}"
            .getBytes(StandardCharsets.UTF_8), Order.class);
        assertEquals("ann", o.customer);
        assertEquals(2, o.lines.get(0).qty);
        assertEquals(Size.LARGE, o.size);
    }

    /** {"customer":42} is not a name: Jackson would make it "42"; a string field takes a JSON string only. */
    @Test
    void aStringFieldRefusesANumberOrABoolean() {
        assertEquals("field 'customer' must be a string, got an integer", refusal("{\"customer\":42}"));
        assertEquals("field 'customer' must be a string, got a number with a fraction", refusal("{\"customer\":4.2}"));
        assertEquals("field 'customer' must be a string, got a boolean", refusal("{\"customer\":true}"));
        assertEquals("field 'lines[0].item' must be a string, got an integer", refusal("{\"lines\":[{\"item\":7}]}"));
    }

    private static Request post(String contentType, String json) {
        java.util.List<String> headers = contentType == null ? List.of() : List.of("Content-Type", contentType);
        return Request.parsed("POST", "/orders", "/orders", null, 1, headers, json.getBytes(StandardCharsets.UTF_8), true);
    }

    /** A body that says it is something else is refused (415): a form or text/plain post may come cross-site without a preflight. */
    @Test
    void aBodyMustSayItIsJsonOrNothing() {
        for (String json : new String[] {"application/json", "application/json; charset=utf-8", "Application/JSON",
                "application/vnd.api+json", null}) {
            assertEquals("ann", post(json, "{\"customer\":\"ann\"}").json(Order.class).customer, String.valueOf(json));
        }
        for (String other : new String[] {"application/x-www-form-urlencoded", "text/plain", "text/json", "multipart/form-data; boundary=x"}) {
            HttpException e = assertThrows(HttpException.class, () -> post(other, "{\"customer\":\"ann\"}").json(Order.class), other);
            assertEquals(415, e.status());
            assertTrue(e.getMessage().contains("Content-Type: application/json"), e.getMessage());
        }
    }

    @Test
    void anUnknownFieldIsNamedWithTheKnownOnes() {
        assertEquals("unknown field 'colour' (known fields: customer, lines, paid, size)", refusal("{\"customer\":\"ann\",\"colour\":\"red\"}"));
        assertEquals("unknown field 'lines[1].price' (known fields: item, qty)",
            refusal("{\"lines\":[{\"item\":\"tea\"},{\"item\":\"cake\",\"price\":3}]}"));
    }

    @Test
    void aWrongTypeNamesTheFieldWhatItMustBeAndWhatCame() {
        assertEquals("field 'paid' must be true or false, got a string", refusal("{\"paid\":\"yes\"}"));
        assertEquals("field 'customer' must be a string, got an object", refusal("{\"customer\":{\"name\":\"ann\"}}"));
        assertEquals("field 'lines[0].qty' must be an integer, got a string", refusal("{\"lines\":[{\"qty\":\"two\"}]}"));
        assertEquals("field 'lines' must be an array, got a string", refusal("{\"lines\":\"tea\"}"));
        assertEquals("field 'size' must be one of \"SMALL\", \"LARGE\", got a string", refusal("{\"size\":\"HUGE\"}"));
        assertEquals("the body must be an object, got an array", refusal("[1,2]"));
    }

    @Test
    void malformedJsonSaysWhereWithoutJacksonsSourceNote() {
        String m = refusal("{\"customer\":");
        assertTrue(m.startsWith("malformed JSON at line 1, column 13"), m);
        assertFalse(m.contains("Source") || m.contains("StreamReadFeature"), m);
        assertEquals("malformed JSON at line 1, column 13 (field 'customer'): Unexpected end-of-input within/between Object entries", m);
        assertEquals("field 'lines[0].qty': Numeric value (99999999999) out of range of int (-2147483648 - 2147483647)",
            refusal("{\"lines\":[{\"qty\":99999999999}]}"));
        assertEquals("expected a JSON body, got none", refusal(""));
    }

    /** A body of null bound to null, and the handler failed on it with a 500 and a stack trace: the client's mistake is a 400. */
    @Test
    void aNullBodyIsA400() {
        assertEquals("the body must be an object, got null", refusal("null"));
        assertEquals("the body must be an object, got null", refusal(" null\n"));
        HttpException e = assertThrows(HttpException.class, () -> Json.read("null".getBytes(StandardCharsets.UTF_8), Integer.class));
        assertEquals("the body must be an integer, got null", e.getMessage());
    }

    /** One body, one value: what follows it would be silently dropped. */
    @Test
    void trailingContentAfterTheValueIsA400() {
        assertEquals("trailing content after the JSON value at line 1, column 20", refusal("{\"customer\":\"ann\"} xyz"));
        assertEquals("trailing content after the JSON value at line 1, column 19", refusal("{\"customer\":\"ann\"}{\"paid\":true}"));
        assertEquals("trailing content after the JSON value at line 3, column 2", refusal("{\"customer\":\"ann\"}\r\n\n\t}"), "CRLF is one line break, a tab one column");
        assertEquals("trailing content after the JSON value at line 1, column 19", refusal("{\"customer\":\"\u00e9\u20ac\"} ,"),
            "columns count characters, not UTF-8 bytes");
        assertEquals("ann", Json.read("\n {\"customer\":\"ann\"} \r\n\t".getBytes(StandardCharsets.UTF_8), Order.class).customer,
            "whitespace around the value is no content (RFC 8259 section 2)");
    }

    @Test
    void aTypeJacksonCannotBindIsAServerBugNotA400() {
        for (Class<?> type : List.of(Unbindable.class, Runnable.class)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.read("{}".getBytes(StandardCharsets.UTF_8), type));
            assertTrue(e.getMessage().startsWith("cannot bind JSON to " + type.getName() + ": "), e.getMessage());
        }
    }

    /** Half written when its second getter throws: the thread's generator is left mid-object, so the write drops it. */
    public static final class FailsHalfway {
        public String getA() {
            return "a";
        }

        public String getB() {
            throw new IllegalStateException("no b");
        }
    }

    /** Serialized as a string that is itself JSON written with {@link Json#writeString}: a write inside a write. */
    public static final class Nested {
        @com.fasterxml.jackson.annotation.JsonValue
        public String json() {
            return Json.writeString(java.util.Map.of("inner", List.of(1, 2)));
        }
    }

    private static String json(Object value) {
        return new String(Json.write(value), StandardCharsets.UTF_8);
    }

    /**
     * A thread keeps its generator from one write to the next (Json's {@code Generator}): each value is
     * still a document of its own, as Jackson's {@code writeValueAsBytes} writes it, whatever the thread
     * wrote before: no separator between them, nothing left of a failed, a nested or a large one.
     */
    @Test
    void eachWriteIsItsOwnDocumentWhateverTheThreadWroteBefore() throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper jackson = new com.fasterxml.jackson.databind.ObjectMapper();
        Object order = Json.read("{\"customer\":\"zoë\",\"lines\":[{\"item\":\"tea\",\"qty\":2}]}".getBytes(StandardCharsets.UTF_8), Order.class);
        byte[] first = Json.write(order);
        assertEquals(new String(jackson.writeValueAsBytes(order), StandardCharsets.UTF_8), new String(first, StandardCharsets.UTF_8));
        assertEquals(new String(first, StandardCharsets.UTF_8), json(order), "the second write, the same bytes");
        assertEquals("{\"message\":\"Hello, World!\"}", json(java.util.Map.of("message", "Hello, World!")));
        assertEquals("null", json(null));
        assertEquals("7", json(7));

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.write(new FailsHalfway()));
        assertTrue(e.getMessage().contains("FailsHalfway"), e.getMessage());
        assertEquals("{\"id\":7}", json(java.util.Map.of("id", 7)), "nothing of the failed write is left");

        assertEquals("\"{\\\"inner\\\":[1,2]}\"", json(new Nested()), "a write inside a write");
        assertEquals("[true]", json(List.of(true)));

        String large = "x".repeat(100_000);
        assertEquals(100_002, Json.write(large).length);
        assertEquals("\"y\"", json("y"), "after a large value, a small one alone");
    }
}

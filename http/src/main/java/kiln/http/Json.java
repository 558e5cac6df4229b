package kiln.http;

import java.nio.charset.StandardCharsets;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.util.Collection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.core.exc.StreamReadException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.PropertyBindingException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;

/**
 * JSON bodies, written and read by Jackson with one shared, thread-safe {@link ObjectMapper}: what
 * {@link Response#json} and {@link Request#json} use, for code that needs the bytes themselves (an
 * event's data, a fingerprint).
 *
 * <pre>{@code
 * events.event(Long.toString(set.seq()), "change", Json.writeString(set.changes()));
 * Todo todo = Json.read(bytes, Todo.class);        // 400 naming the field when it does not fit
 * }</pre>
 *
 * <p>One change from Jackson's defaults: a string field takes a JSON string only, so that
 * {@code {"title":42}} is a 400, not the title "42".
 */
public final class Json {
    private static final ObjectMapper MAPPER = mapper();

    /**
     * Jackson's mapper, with one change: a string field takes a JSON string only, so that
     * {@code {"author":42}} is a 400 ("must be a string, got a number"), not the name "42".
     */
    private static ObjectMapper mapper() {
        ObjectMapper m = new ObjectMapper();
        m.coercionConfigFor(LogicalType.Textual)
            .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
            .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
            .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        return m;
    }

    private Json() {
    }

    /**
     * Serializes a value: {@code Json.write(Map.of("id", 7))} is the 8 bytes {@code {"id":7}}.
     * Records by their components, other classes by their public fields and getters, maps, lists,
     * arrays, strings, numbers, booleans and null as JSON has them.
     *
     * @param value what to serialize
     * @return {@code value} as UTF-8 JSON, compact (no whitespace between tokens)
     * @throws IllegalArgumentException when Jackson cannot serialize it (a server bug, not the client's)
     */
    public static byte[] write(Object value) {
        try {
            Generator g = Generator.forThisThread();
            return g == null ? MAPPER.writeValueAsBytes(value) : g.write(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot serialize " + value.getClass().getName() + " as JSON", e);
        } catch (IOException e) {
            throw new IllegalStateException("a JSON write into memory failed", e);  // the generator's stream never throws
        }
    }

    /**
     * A platform thread's own Jackson generator, kept from one {@link #write} to the next, with the
     * bytes it writes into. {@code writeValueAsBytes} makes a generator for each value, and with it
     * an I/O context, a byte builder and their write contexts, and takes and gives back its buffers
     * from the thread's buffer recycler: seven objects and two compare-and-sets a call, a third of
     * what a {@code /json} request allocated. Each value is still serialized afresh, by the same
     * mapper; the bytes are the same ({@code JsonTest}).
     *
     * <p>Not kept on a virtual thread (one per request: nothing to reuse, and one such generator
     * per thread would be garbage as well), nor while one is in use on the thread (a serializer that
     * calls {@link #write} itself gets a generator of its own). A write that fails drops the thread's
     * generator, whose state it may have left halfway; one that grew the buffer past
     * {@value #KEEP_BYTES} bytes leaves a new, small one, so that one large value is not held for
     * the thread's life.
     */
    private static final class Generator extends OutputStream {
        private static final int KEEP_BYTES = 16 * 1024;
        /** The buffer's size at first, and again after a value over {@link #KEEP_BYTES}. */
        private static final int INITIAL_BYTES = 256;
        private static final ThreadLocal<Generator> THREADS = new ThreadLocal<>();
        /** {@code java.lang.VirtualThread} on JDK 21 and later; null before. */
        private static final Class<?> VIRTUAL = virtualThreadClass();
        private final JsonGenerator json;
        /** What the generator wrote of the value under way: {@code bytes[0, count)}. */
        private byte[] bytes = new byte[INITIAL_BYTES];
        private int count;
        private boolean busy;

        private Generator() throws IOException {
            json = MAPPER.createGenerator(this);
            json.setRootValueSeparator(null);  // values are written one after another, each a document of its own
        }

        /** @return this thread's generator, made at its first use; null on a virtual thread, or while it is in use */
        static Generator forThisThread() throws IOException {
            Thread t = Thread.currentThread();
            if (t.getClass() == VIRTUAL) return null;
            Generator g = THREADS.get();
            if (g == null) {
                g = new Generator();
                THREADS.set(g);
            }
            return g.busy ? null : g;
        }

        byte[] write(Object value) throws IOException {
            busy = true;
            boolean done = false;
            try {
                count = 0;
                MAPPER.writeValue(json, value);
                json.flush();
                byte[] written = Arrays.copyOf(bytes, count);
                done = true;
                return written;
            } finally {
                busy = false;
                if (!done) {
                    THREADS.remove();
                } else if (bytes.length > KEEP_BYTES) {
                    bytes = new byte[INITIAL_BYTES];
                }
            }
        }

        // The generator's own buffer takes the characters; these calls come at its flush (and when it fills).
        @Override
        public void write(int b) {
            room(1);
            bytes[count++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            room(len);
            System.arraycopy(b, off, bytes, count, len);
            count += len;
        }

        private void room(int more) {
            if (more > bytes.length - count) bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, count + more));
        }

        private static Class<?> virtualThreadClass() {
            try {
                return Class.forName("java.lang.VirtualThread");
            } catch (ClassNotFoundException e) {
                return null;  // JDK 17: every thread is a platform thread
            }
        }
    }

    /**
     * {@link #write} as a string, for text that carries JSON: a server-sent event's {@code data:}
     * ({@code events.event(id, "update", Json.writeString(set.changes()))}), a fingerprint.
     *
     * @return {@code value} as compact JSON text
     * @throws IllegalArgumentException as {@link #write}
     */
    public static String writeString(Object value) {
        return new String(write(value), StandardCharsets.UTF_8);
    }

    /**
     * Binds a body to a type. A 400 says what is wrong in the client's terms, the JSON's, never the
     * server's Java class: {@code unknown field 'colour' (known fields: done, id, title)},
     * {@code field 'done' must be true or false, got a string}, {@code field 'items[2].qty' must be
     * an integer, got a string}, {@code the body must be an object, got an array},
     * {@code malformed JSON at line 1, column 10: Unexpected end-of-input...}. A body of
     * {@code null} binds to nothing ({@code the body must be an object, got null}), and one JSON
     * value is the whole body: whitespace may follow it, nothing else
     * ({@code trailing content after the JSON value at line 1, column 9}; RFC 8259 section 2).
     *
     * @param json UTF-8 JSON, e.g. a request's content
     * @return {@code json} bound to {@code type}, never null
     * @throws HttpException            400 naming what is wrong when it is empty, {@code null}, has
     *                                  content after its value, or does not bind
     * @throws IllegalArgumentException when {@code type} cannot be bound at all (no creator Jackson
     *                                  can use: a server bug, answered 500)
     */
    public static <T> T read(byte[] json, Class<T> type) {
        if (json.length == 0) throw new HttpException(400, "expected a JSON body, got none");
        // A parser of our own, closed after the failure is read: it still says which token it stopped at.
        JsonParser parser;
        try {
            parser = MAPPER.createParser(json);
        } catch (IOException e) {
            throw new IllegalStateException("a parser over bytes in memory", e);
        }
        try {
            T value = MAPPER.readValue(parser, type);
            if (value == null) {
                String expected = jsonType(type);
                String got = got(parser);
                throw new HttpException(400, "the body must be " + (expected == null ? "a value" : expected) + ", got "
                    + (got == null ? "null" : got));
            }
            // Checked here, not with Jackson's FAIL_ON_TRAILING_TOKENS: its error names the Java type, not where the content is.
            int trailing = afterWhitespace(json, (int) parser.currentLocation().getByteOffset());
            if (trailing < json.length) {
                throw new HttpException(400, "trailing content after the JSON value at " + lineAndColumn(json, trailing));
            }
            return value;
        } catch (InvalidDefinitionException e) {
            throw unbindable(type, e);
        } catch (MismatchedInputException e) {
            // Jackson reports a type it has no way to construct as an input mismatch ("...no Creators...")
            if (String.valueOf(e.getOriginalMessage()).contains("Creator")) throw unbindable(type, e);
            throw new HttpException(400, problem(e));
        } catch (IOException e) {
            throw new HttpException(400, problem(e));
        } finally {
            try {
                parser.close();
            } catch (IOException e) {
                // nothing to release: the input is a byte array
            }
        }
    }

    /** @return the index of the first byte at or after {@code from} that is not JSON whitespace (RFC 8259 section 2), or the length */
    private static int afterWhitespace(byte[] json, int from) {
        int i = from;
        while (i < json.length && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r')) i++;
        return i;
    }

    /** @return where byte {@code at} of UTF-8 {@code json} is, as {@code line 1, column 9}: both from 1, columns in characters */
    private static String lineAndColumn(byte[] json, int at) {
        int line = 1;
        int column = 1;
        for (int i = 0; i < at; i++) {
            byte b = json[i];
            if (b == '\n' || b == '\r' && (i + 1 == json.length || json[i + 1] != '\n')) {
                line++;
                column = 1;
            } else if (b != '\r' && (b & 0xc0) != 0x80) {  // a UTF-8 continuation byte is part of the character before
                column++;
            }
        }
        return "line " + line + ", column " + column;
    }

    private static IllegalArgumentException unbindable(Class<?> type, JsonProcessingException e) {
        return new IllegalArgumentException("cannot bind JSON to " + type.getName() + ": " + e.getOriginalMessage(), e);
    }

    /** @return what is wrong with the body, for a 400's detail: the field's path and the JSON types, no Java names */
    static String problem(IOException e) {
        if (e instanceof PropertyBindingException) {
            PropertyBindingException p = (PropertyBindingException) e;
            List<JsonMappingException.Reference> refs = p.getPath();
            String field = path(refs);
            boolean named = !refs.isEmpty() && p.getPropertyName().equals(refs.get(refs.size() - 1).getFieldName());
            if (!named) field = field.isEmpty() ? p.getPropertyName() : field + "." + p.getPropertyName();
            String known = known(p.getKnownPropertyIds());
            return "unknown field '" + field + "'" + (known.isEmpty() ? "" : " (known fields: " + known + ")");
        }
        if (e instanceof MismatchedInputException) {
            MismatchedInputException m = (MismatchedInputException) e;
            String field = path(m.getPath());
            String expected = jsonType(m.getTargetType());
            String got = got(m.getProcessor());
            String what = field.isEmpty() ? "the body" : "field '" + field + "'";
            if (expected == null) return what + " does not fit" + (got == null ? "" : ": got " + got);
            return what + " must be " + expected + (got == null ? "" : ", got " + got);
        }
        if (e instanceof ValueInstantiationException) {
            String field = path(((JsonMappingException) e).getPath());
            // the type's own constructor refused the value: its message is the app's, meant to be read
            String why = e.getCause() != null ? e.getCause().getMessage() : null;
            return (field.isEmpty() ? "invalid body" : "invalid field '" + field + "'") + (why == null ? "" : ": " + why);
        }
        if (e instanceof JsonMappingException) {
            String field = path(((JsonMappingException) e).getPath());
            String what = field.isEmpty() ? "the body" : "field '" + field + "'";
            // a number too large for its field, found by the parser and given a path by databind
            if (e.getCause() instanceof InputCoercionException) return what + ": " + ((InputCoercionException) e.getCause()).getOriginalMessage();
            return what + " does not fit";
        }
        if (e instanceof StreamReadException) {
            StreamReadException r = (StreamReadException) e;
            JsonParser parser = r.getProcessor();
            String field = parser == null ? "" : pointer(parser.getParsingContext().pathAsPointer().toString());
            JsonLocation at = r.getLocation();
            String where = at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
            return "malformed JSON" + where + (field.isEmpty() ? "" : " (field '" + field + "')") + ": " + withoutSource(r.getOriginalMessage());
        }
        return "unreadable JSON: " + e.getMessage();
    }

    /** @return the references as the field's path in the JSON: {@code items[2].qty}; "" for the whole body */
    private static String path(List<JsonMappingException.Reference> references) {
        StringBuilder s = new StringBuilder();
        for (JsonMappingException.Reference r : references) {
            if (r.getFieldName() != null) {
                if (s.length() > 0) s.append('.');
                s.append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                s.append('[').append(r.getIndex()).append(']');
            }
        }
        return s.toString();
    }

    /** @return a JSON Pointer ({@code /items/2/qty}) as {@link #path} writes it */
    private static String pointer(String jsonPointer) {
        StringBuilder s = new StringBuilder();
        for (String token : jsonPointer.split("/")) {
            if (token.isEmpty()) continue;
            String name = token.replace("~1", "/").replace("~0", "~");
            if (name.chars().allMatch(Character::isDigit)) {
                s.append('[').append(name).append(']');
            } else {
                if (s.length() > 0) s.append('.');
                s.append(name);
            }
        }
        return s.toString();
    }

    private static String known(Collection<Object> ids) {
        if (ids == null || ids.isEmpty()) return "";
        TreeSet<String> names = new TreeSet<>();
        for (Object id : ids) names.add(String.valueOf(id));
        return String.join(", ", names);
    }

    /** @return what a Java type takes in JSON, e.g. "an integer", "a string"; null when that says nothing useful */
    private static String jsonType(Class<?> type) {
        if (type == null) return null;
        if (type == boolean.class || type == Boolean.class) return "true or false";
        if (type == int.class || type == long.class || type == short.class || type == byte.class
            || type == Integer.class || type == Long.class || type == Short.class || type == Byte.class
            || type == BigInteger.class) {
            return "an integer";
        }
        if ((type.isPrimitive() && type != char.class) || Number.class.isAssignableFrom(type)) return "a number";
        if (type == String.class || type == char.class || type == Character.class || CharSequence.class.isAssignableFrom(type)) return "a string";
        if (type.isEnum()) {
            List<String> names = new ArrayList<>();
            for (Object c : type.getEnumConstants()) names.add("\"" + c + "\"");
            return "one of " + String.join(", ", names);
        }
        if (type.isArray() || Collection.class.isAssignableFrom(type)) return "an array";
        if (Map.class.isAssignableFrom(type) || !type.getName().startsWith("java.")) return "an object";
        return null;
    }

    /** @return the JSON token the parser stopped at, in words ("a string", "an array"...), or null */
    private static String got(Object processor) {
        if (!(processor instanceof JsonParser)) return null;
        JsonToken t = ((JsonParser) processor).currentToken();
        if (t == null) return null;
        switch (t) {
            case START_OBJECT: return "an object";
            case START_ARRAY: return "an array";
            case VALUE_STRING: return "a string";
            case VALUE_NUMBER_INT: return "an integer";
            case VALUE_NUMBER_FLOAT: return "a number with a fraction";
            case VALUE_TRUE:
            case VALUE_FALSE: return "a boolean";
            case VALUE_NULL: return "null";
            default: return null;
        }
    }

    /** Jackson's messages end with where in the input they are ("[Source: ...; line: 1, column: 5]"), said here already. */
    private static String withoutSource(String message) {
        if (message == null) return "";
        return message.replaceAll("\\s*\\(start marker at \\[Source: [^\\]]*\\]\\)", "")
            .replaceAll("\\s*at \\[Source: [^\\]]*\\]", "")
            .replaceAll("\\s*\\[Source: [^\\]]*\\]", "")
            .trim();
    }
}

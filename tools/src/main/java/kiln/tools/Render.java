package kiln.tools;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import kiln.db.Tuple;

/**
 * One entry as {@code range} and {@code get} print it: a key, a value and a note, read as what its
 * space holds ({@link Layout.Kind}). A table's entry is its key and value ({@link Literal}); an
 * expiring table's value is its own with the expiry in the note; an index entry is its index key
 * and the row key; an expiry schedule's entry is the time and the row key; a feed log's entry is
 * the sequence number and the change set as JSON.
 */
final class Render {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Render() {
    }

    /** A printed entry: {@code key TAB value [TAB note]}. */
    record Line(String key, String value, String note) {
        String text() {
            return key + "\t" + value + (note == null ? "" : "\t" + note);
        }
    }

    static Line entry(Layout layout, Layout.Kind kind, byte[] k, byte[] v, Instant now) {
        switch (kind) {
            case EXPIRING_TABLE -> {
                if (v.length < Long.BYTES) break;
                long at = ByteBuffer.wrap(v).getLong();
                String note = at == 0 ? "never expires" : (micros(at).isAfter(now) ? "expires " : "expired ") + micros(at);
                return new Line(Literal.key(k), Literal.value(Arrays.copyOfRange(v, Long.BYTES, v.length)), note);
            }
            case INDEX -> {
                byte[][] parts = indexEntry(k);
                if (parts == null) break;
                return new Line(Literal.key(parts[0]), "row " + Literal.key(parts[1]), null);
            }
            case EXPIRY_SCHEDULE -> {
                if (k.length <= Long.BYTES) break;
                long at = ByteBuffer.wrap(k).getLong();
                return new Line(micros(at).toString(), "row " + Literal.key(Arrays.copyOfRange(k, Long.BYTES, k.length)), null);
            }
            case FEED_LOG -> {
                JsonNode set = changeSet(v);
                if (k.length != Long.BYTES || set == null) break;
                return new Line(Literal.key(k), set.toString(), null);
            }
            case SETTINGS -> {
                String name = new String(k, StandardCharsets.UTF_8);
                if (name.equals(Layout.SECRET)) return new Line(Literal.key(k), "(" + v.length + " bytes, not shown: it signs continuations)", null);
                if (name.startsWith("index:")) return new Line(Literal.key(k), layout.indexState(name.substring(6)), null);
                if (name.startsWith("expiring:")) return new Line(Literal.key(k), "expiring", null);
            }
            default -> {
            }
        }
        return new Line(Literal.key(k), v.length == 0 ? "0x" : Literal.value(v), null);
    }

    static Instant micros(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000), Math.floorMod(micros, 1_000_000) * 1_000L);
    }

    /**
     * @return an index entry's index key and row key: the entry's key is the tuple of the two as
     *         byte strings (db/'s {@code Index}); null when {@code k} is not one
     */
    static byte[][] indexEntry(byte[] k) {
        Tuple t = Literal.tuple(k);
        if (t == null || t.size() != 2 || !(t.get(0) instanceof byte[] i) || !(t.get(1) instanceof byte[] row)) return null;
        return new byte[][] {i, row};
    }

    /**
     * @return a feed log's change set as JSON, {@code {"committedAt":..,"changes":[{"key":..,"value":..},..]}},
     *         a deleted row {@code "deleted":true} (and {@code "expired":true} when the sweeper deleted it);
     *         null when {@code v} is not one (db/'s {@code ChangeFeed.LogCodec})
     */
    static JsonNode changeSet(byte[] v) {
        try {
            ByteBuffer in = ByteBuffer.wrap(v);
            ObjectNode set = JSON.createObjectNode();
            set.put("committedAt", micros(in.getLong()).toString());
            int n = in.getInt();
            if (n < 0) return null;
            ArrayNode changes = set.putArray("changes");
            for (int i = 0; i < n; i++) {
                ObjectNode c = changes.addObject();
                c.put("key", Literal.key(bytes(in, in.getInt())));
                int size = in.getInt();
                if (size == -1 || size == -2) {
                    c.put("deleted", true);
                    if (size == -2) c.put("expired", true);
                } else {
                    byte[] value = bytes(in, size);
                    JsonNode json = Literal.jsonTree(value);
                    if (json != null && json.isContainerNode()) c.set("value", json);
                    else c.put("value", value.length == 0 ? "0x" : Literal.value(value));
                }
            }
            return in.hasRemaining() ? null : set;
        } catch (RuntimeException e) {
            return null;  // a buffer under- or overflow, a negative length: not a change set
        }
    }

    private static byte[] bytes(ByteBuffer in, int n) {
        byte[] b = new byte[n];
        in.get(b);
        return b;
    }
}

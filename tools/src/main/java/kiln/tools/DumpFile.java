package kiln.tools;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import kiln.db.Keys;

/**
 * The dump's file: JSON lines, one per entry, in any engine's terms (so a dump of LMDB loads into
 * PostgreSQL and back). Keys and values are base64 (RFC 4648, with padding); the lines:
 *
 * <pre>
 * {"dump":"kiln","version":1,"source":"/var/lib/kiln","engine":"lmdb","taken":"2026-11-28T10:00:00Z","spaces":["fortune","world"]}
 * {"space":"fortune","entries":12}
 * {"k":"gAAAAQ==","v":"Zm9ydHVuZTogTm8gc3VjaCBmaWxlIG9yIGRpcmVjdG9yeQ=="}
 * ...
 * {"end":"fortune","entries":12,"sha256":"9f0c..."}
 * {"space":"world","entries":10000}
 * ...
 * {"finish":true,"spaces":2,"entries":10012}
 * </pre>
 *
 * A space's {@code entries} at its start is what the source counted (for progress); its end line
 * counts and digests what was written ({@link Dump.Digest}), and a reader checks both, so a
 * truncated or altered dump is refused, naming the line. The last line says the dump is whole.
 */
final class DumpFile {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder UNB64 = Base64.getDecoder();

    private DumpFile() {
    }

    /** Writes a dump to a character stream, a line per call; flushes at the end. */
    static final class Out implements Dump.Sink {
        private final Writer out;

        Out(Writer out) {
            this.out = out;
        }

        @Override
        public void begin(Dump.Header h) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("dump", "kiln");
            line.put("version", Dump.VERSION);
            line.put("source", h.source());
            line.put("engine", h.engine());
            line.put("taken", h.taken().toString());
            line.put("spaces", h.spaces());
            json(line);
        }

        @Override
        public void space(String name, long expected) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("space", name);
            line.put("entries", expected);
            json(line);
        }

        @Override
        public void entry(ByteBuffer key, ByteBuffer value) {
            write("{\"k\":\"" + B64.encodeToString(Keys.toArray(key)) + "\",\"v\":\"" + B64.encodeToString(Keys.toArray(value)) + "\"}\n");
        }

        @Override
        public void end(String name, long entries, byte[] sha256) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("end", name);
            line.put("entries", entries);
            line.put("sha256", Dump.hex(sha256));
            json(line);
        }

        @Override
        public void finish(long spaces, long entries) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("finish", true);
            line.put("spaces", spaces);
            line.put("entries", entries);
            json(line);
            try {
                out.flush();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private void json(Map<String, Object> line) {
            try {
                write(JSON.writeValueAsString(line) + "\n");
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }

        private void write(String s) {
            try {
                out.write(s);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /**
     * Reads a whole dump from {@code in} into {@code sink}, checking it as it goes: the first line's
     * format and version, each space's entries against its end line's count and digest, the last line.
     *
     * @param name what to call the input in messages (a file name, or standard input)
     * @return the header
     * @throws ToolException naming the line of the first thing wrong
     */
    static Dump.Header read(BufferedReader in, String name, Dump.Sink sink) {
        Reading r = new Reading(in, name);
        JsonNode first = r.json(r.line());
        if (first == null || !"kiln".equals(first.path("dump").asText(null))) {
            throw r.bad("is not a kiln dump: its first line is not {\"dump\":\"kiln\",...}");
        }
        int version = first.path("version").asInt(-1);
        if (version != Dump.VERSION) throw r.bad("is a kiln dump of format version " + version + "; this tool reads version " + Dump.VERSION);
        List<String> spaces = new ArrayList<>();
        first.path("spaces").forEach(s -> spaces.add(s.asText()));
        Instant taken;
        try {
            taken = Instant.parse(first.path("taken").asText(""));
        } catch (java.time.format.DateTimeParseException e) {
            throw r.bad("names no time for its snapshot (\"taken\")");
        }
        Dump.Header header = new Dump.Header(first.path("source").asText(""), first.path("engine").asText(""), taken, spaces);
        sink.begin(header);
        long total = 0;
        int seen = 0;
        while (true) {
            String line = r.line();
            if (line == null) throw r.bad("ends before its last line: it was cut short");
            JsonNode node = r.json(line);
            if (node.has("finish")) {
                if (seen != spaces.size() || node.path("spaces").asLong() != seen || node.path("entries").asLong() != total) {
                    throw r.bad("holds " + seen + " spaces and " + total + " entries, but its last line says " + node.path("spaces") + " and "
                        + node.path("entries") + " (of " + spaces.size() + " spaces named in its first line)");
                }
                if (r.line() != null) throw r.bad("goes on after its last line");
                sink.finish(seen, total);
                return header;
            }
            String space = node.path("space").asText(null);
            if (space == null) throw r.bad("expected a space's first line {\"space\":...}");
            if (seen >= spaces.size() || !space.equals(spaces.get(seen))) {
                throw r.bad("holds space '" + space + "' where its first line names " + (seen < spaces.size() ? "'" + spaces.get(seen) + "'" : "no more"));
            }
            sink.space(space, node.path("entries").asLong());
            total += entries(r, space, sink);
            seen++;
        }
    }

    /** Reads one space's entries and its end line. @return its entries */
    private static long entries(Reading r, String space, Dump.Sink sink) {
        Dump.Digest digest = new Dump.Digest();
        while (true) {
            String line = r.line();
            if (line == null) throw r.bad("ends inside space '" + space + "': it was cut short");
            ByteBuffer[] kv = entry(line);
            if (kv == null) {
                JsonNode node = r.json(line);
                if (!space.equals(node.path("end").asText(null))) throw r.bad("expected an entry or the end of space '" + space + "'");
                byte[] sha = digest.sha256();
                if (node.path("entries").asLong(-1) != digest.entries() || !MessageDigest.isEqual(sha, hexBytes(node.path("sha256").asText("")))) {
                    throw r.bad("space '" + space + "' does not match its end line: " + digest.entries() + " entries read (digest "
                        + Dump.hex(sha) + "), the line says " + node.path("entries") + " (" + node.path("sha256") + "): the dump was altered");
                }
                sink.end(space, digest.entries(), sha);
                return digest.entries();
            }
            digest.add(kv[0], kv[1]);
            sink.entry(kv[0], kv[1]);
        }
    }

    /** @return the key and value of an entry line {@code {"k":"..","v":".."}}, or null for another line */
    private static ByteBuffer[] entry(String line) {
        if (!line.startsWith("{\"k\":\"") || !line.endsWith("\"}")) return null;
        int mid = line.indexOf("\",\"v\":\"", 6);
        if (mid < 0) return null;
        try {
            return new ByteBuffer[] {ByteBuffer.wrap(UNB64.decode(line.substring(6, mid))), ByteBuffer.wrap(UNB64.decode(line.substring(mid + 7, line.length() - 2)))};
        } catch (IllegalArgumentException e) {
            return null;  // not base64: reported as a line that is not an entry
        }
    }

    private static byte[] hexBytes(String hex) {
        try {
            return java.util.HexFormat.of().parseHex(hex);
        } catch (IllegalArgumentException e) {
            return new byte[0];
        }
    }

    /** The input and its line number, for messages. */
    private static final class Reading {
        private final BufferedReader in;
        private final String name;
        private long number;

        Reading(BufferedReader in, String name) {
            this.in = in;
            this.name = name;
        }

        String line() {
            try {
                String line = in.readLine();
                if (line != null) number++;
                return line;
            } catch (IOException e) {
                throw new ToolException("cannot read " + name + ": " + e.getMessage(), e);
            }
        }

        JsonNode json(String line) {
            if (line == null) throw bad("is empty");
            try {
                JsonNode node = JSON.readTree(line);
                if (node == null || !node.isObject()) throw bad("line is not a JSON object");
                return node;
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw bad("line is not JSON (" + e.getOriginalMessage() + ")");
            }
        }

        ToolException bad(String what) {
            return new ToolException(name + (number > 0 ? ", line " + number : "") + ": the dump " + what);
        }
    }
}

package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import kiln.demo.Fortune;
import kiln.demo.DemoDb;
import kiln.http.Http;
import kiln.db.Db;

/**
 * What the contract says a response looks like, built from app's constants, plus the assertions
 * every test class shares.
 */
final class Contract {
    static final ObjectMapper JSON = new ObjectMapper();

    /** Shared by all tests; HTTP/1.1 so that every front end sees the same protocol. */
    static final HttpClient CLIENT = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5))
        .build();

    /** IMF-fixdate, RFC 9110 section 5.6.7: fixed width, two-digit day, always "GMT". */
    private static final Pattern IMF_FIXDATE = Pattern.compile(
        "(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \\d{4} \\d{2}:\\d{2}:\\d{2} GMT");
    /** How far the Date header may be from the test's clock: same machine, so only scheduling delays. */
    private static final Duration DATE_SLACK = Duration.ofMinutes(5);

    /** The 12 rows of TechEmpower's Fortune table (create-postgres.sql), index i holding id i+1. */
    static final List<String> FORTUNES = List.of(
        "fortune: No such file or directory",
        "A computer scientist is someone who fixes things that aren't broken.",
        "After enough decimal places, nobody gives a damn.",
        "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
        "A computer program does what you tell it to do, not what you want it to do.",
        "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom Christaensen",
        "Any program that runs right is obsolete.",
        "A list is only as strong as its weakest link. \u2014 Donald Knuth",
        "Feature: A bug with seniority.",
        "Computers make very fast, very accurate mistakes.",
        "<script>alert(\"This should not be displayed in a browser alert box.\");</script>",
        "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1\u30de\u30fc\u30af");

    private Contract() {
    }

    /** @return the fortune rows the database starts with */
    static List<Fortune> storedFortunes() {
        List<Fortune> rows = new ArrayList<>();
        for (int i = 0; i < FORTUNES.size(); i++) rows.add(new Fortune(i + 1, FORTUNES.get(i)));
        return rows;
    }

    /**
     * The contract's header lines ({@link Http}) in order, Date's value as
     * {@link RawResponse#DATE_PLACEHOLDER}: Server, Date, Content-Type, any extra field other than
     * Connection ({@code Allow}, {@code Retry-After}), Content-Length, then Connection if given.
     *
     * @param extraFields e.g. "Allow: GET", "Connection: close"
     */
    static List<String> fieldLines(String contentType, int contentLength, String... extraFields) {
        List<String> lines = new ArrayList<>();
        lines.add("Server: " + Http.SERVER);
        lines.add("Date: " + RawResponse.DATE_PLACEHOLDER);
        lines.add("Content-Type: " + contentType);
        for (String f : extraFields) {
            if (!isConnection(f)) lines.add(f);
        }
        lines.add("Content-Length: " + contentLength);
        for (String f : extraFields) {
            if (isConnection(f)) lines.add(f);
        }
        return lines;
    }

    private static boolean isConnection(String field) {
        return field.regionMatches(true, 0, "Connection:", 0, "Connection:".length());
    }

    /** @return the contract's status line: always HTTP/1.1, also for HTTP/1.0 requests (RFC 9110 section 6.2) */
    static String statusLine(int status) {
        return "HTTP/1.1 " + status + " " + Http.reason(status);
    }

    /**
     * The expected response head, with {@link RawResponse#DATE_PLACEHOLDER} for the date: the
     * status line and {@link #fieldLines}, each ending in CRLF, then the empty line.
     */
    static String head(int status, String contentType, int contentLength, String... extraFields) {
        StringBuilder h = new StringBuilder(statusLine(status)).append("\r\n");
        for (String line : fieldLines(contentType, contentLength, extraFields)) h.append(line).append("\r\n");
        return h.append("\r\n").toString();
    }

    /**
     * Asserts {@code r}'s head is {@link #head} (Date's value aside): byte for byte, or for a front
     * end with {@link Deviation#HEADER_ORDER_HASHED} the same status line, the same header lines in
     * any order and the same size in bytes.
     */
    static void assertHead(FrontEnd fe, RawResponse r, int status, String contentType, int contentLength, String... extraFields) {
        String expected = head(status, contentType, contentLength, extraFields);
        if (!fe.has(Deviation.HEADER_ORDER_HASHED)) {
            assertEquals(expected, r.headWithoutDate(), () -> fe.id + " head");
            return;
        }
        assertEquals(statusLine(status), r.statusLine, () -> fe.id + " status line of\n" + r.head);
        assertEquals(sorted(fieldLines(contentType, contentLength, extraFields)), sorted(r.fieldLinesWithoutDate()),
            () -> fe.id + " header lines (any order: " + Deviation.HEADER_ORDER_HASHED + ") of\n" + r.head);
        String date = r.header("Date");
        int expectedBytes = expected.length() - RawResponse.DATE_PLACEHOLDER.length() + (date == null ? 0 : date.length());
        assertEquals(expectedBytes, r.head.length(), () -> fe.id + " head size in bytes of\n" + r.head);
    }

    /**
     * Asserts the header block the contract fixes: exactly the fields of {@link #fieldLines} in
     * that order and spelling (in any order for {@link Deviation#HEADER_ORDER_HASHED}); Server is
     * kiln, Date an IMF-fixdate near now, Content-Length the body's length, the extra fields'
     * values as given.
     *
     * @param extraFields "Name: value", e.g. "Allow: GET", "Connection: close"
     */
    static void assertHeaders(FrontEnd fe, RawResponse r, String contentType, String... extraFields) {
        List<String> expectedNames = new ArrayList<>();
        for (String line : fieldLines(contentType, r.body.length, extraFields)) expectedNames.add(line.substring(0, line.indexOf(':')));
        if (fe.has(Deviation.HEADER_ORDER_HASHED)) {
            assertEquals(sorted(expectedNames), sorted(r.headerNames()),
                () -> fe.id + " header fields (any order: " + Deviation.HEADER_ORDER_HASHED + ") in\n" + r.head);
        } else {
            assertEquals(expectedNames, r.headerNames(), () -> fe.id + " header fields and their order in\n" + r.head);
        }
        assertEquals(Http.SERVER, r.header("Server"), "Server");
        assertDate(r.header("Date"));
        assertEquals(contentType, r.header("Content-Type"), "Content-Type");
        assertEquals(Integer.toString(r.body.length), r.header("Content-Length"), "Content-Length vs body bytes");
        for (String f : extraFields) {
            String name = f.substring(0, f.indexOf(':'));
            assertEquals(f.substring(f.indexOf(':') + 1).trim(), r.header(name), () -> name + " in\n" + r.head);
        }
    }

    /**
     * Asserts the response a front end with {@link Deviation#PARSE_ERRORS_BODILESS_400} gives a
     * request its parser rejects: 400 on an HTTP/1.1 status line (reason phrase the library's),
     * exactly the fields {@code Content-Length: 0} and {@code Connection: close}, no body.
     */
    static void assertBodiless400(FrontEnd fe, RawResponse r) {
        assertTrue(fe.has(Deviation.PARSE_ERRORS_BODILESS_400), () -> fe.id + " does not have " + Deviation.PARSE_ERRORS_BODILESS_400);
        assertTrue(r.statusLine.matches("HTTP/1\\.1 400 \\S.*"), () -> fe.id + " status line: " + r.statusLine);
        assertEquals(List.of("Connection: close", "Content-Length: 0"), sorted(r.fieldLinesWithoutDate()),
            () -> fe.id + " header lines (" + Deviation.PARSE_ERRORS_BODILESS_400 + ") of\n" + r.head);
        assertEquals(0, r.body.length, () -> fe.id + " body");
        // RFC 9110 section 6.6.1 wants a Date on every 4xx from a server with a clock: this 400 has none.
        assertNull(r.header("Date"), () -> fe.id + " Date (" + Deviation.PARSE_ERRORS_BODILESS_400 + ")");
    }

    /** @return a sorted copy */
    static List<String> sorted(List<String> lines) {
        List<String> copy = new ArrayList<>(lines);
        Collections.sort(copy);
        return copy;
    }

    /** Asserts {@code value} is an IMF-fixdate (RFC 9110 section 5.6.7) within a few minutes of now. */
    static void assertDate(String value) {
        assertTrue(value != null && IMF_FIXDATE.matcher(value).matches(), () -> "Date is not an IMF-fixdate: " + value);
        Instant date;
        try {
            date = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            throw new AssertionError("Date does not parse as RFC 1123: " + value, e);
        }
        Duration off = Duration.between(Instant.now(), date).abs();
        assertTrue(off.compareTo(DATE_SLACK) <= 0, () -> "Date " + value + " is " + off.toSeconds() + " s away from now");
    }

    /** @return every sample of a {@code /metrics} body, {@code name{labels}} to value, as the Prometheus text format spells them */
    static Map<String, Double> metricSamples(byte[] body) {
        Map<String, Double> samples = new HashMap<>();
        for (String line : new String(body, java.nio.charset.StandardCharsets.UTF_8).split("\n")) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            int space = line.lastIndexOf(' ');
            samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
        }
        return samples;
    }

    /** GETs {@code target} with {@link #CLIENT}; 10 s timeout. */
    static HttpResponse<byte[]> get(ServerProcess server, String target) {
        return send(server, "GET", target);
    }

    /** Sends {@code method target} without a body with {@link #CLIENT}; 10 s timeout. */
    static HttpResponse<byte[]> send(ServerProcess server, String method, String target) {
        HttpRequest request = HttpRequest.newBuilder(server.uri(target)).timeout(Duration.ofSeconds(10))
            .method(method, HttpRequest.BodyPublishers.noBody()).build();
        try {
            return CLIENT.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(method + " " + target + " on " + server.frontEnd.id, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** GETs {@code target}, asserts 200 and the Content-Type, parses the body as JSON. */
    static JsonNode getJson(ServerProcess server, String target) {
        HttpResponse<byte[]> r = get(server, target);
        assertEquals(200, r.statusCode(), () -> "status of " + target + ": " + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8));
        assertEquals(Http.APPLICATION_JSON, r.headers().firstValue("Content-Type").orElse(null), "Content-Type of " + target);
        try {
            return JSON.readTree(r.body());
        } catch (IOException e) {
            throw new AssertionError(target + " is not JSON: " + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8), e);
        }
    }

    /**
     * Records each World row of an /updates answer as acknowledged: a later answer's row for the same
     * id replaces an earlier one (answers in the order they came).
     */
    static void acknowledge(Map<Integer, Integer> acknowledged, JsonNode rows) {
        for (JsonNode row : rows) {
            int[] w = assertWorld(row);
            acknowledged.put(w[0], w[1]);
        }
    }

    /**
     * Opens a stopped server's LMDB directory in this JVM and reads every World row.
     *
     * @return id -> randomNumber for ids 1..{@value DemoDb#WORLD_ROWS}
     * @throws AssertionError if the table does not hold exactly {@value DemoDb#WORLD_ROWS} rows
     */
    static Map<Integer, Integer> storedWorlds(Path dataDir) {
        try (Db db = Db.open(dataDir)) {
            DemoDb demo = DemoDb.open(db);
            assertEquals(DemoDb.WORLD_ROWS, (long) db.read(txn -> demo.worlds().count(txn)).join(), "world rows in " + dataDir);
            return db.read(txn -> {
                Map<Integer, Integer> rows = new HashMap<>();
                for (int id = 1; id <= DemoDb.WORLD_ROWS; id++) rows.put(id, demo.worlds().get(txn, id));
                return rows;
            }).join();
        }
    }

    /** @return one line per acknowledged id whose stored value differs ("id 7: acknowledged 5, stored 3") */
    static List<String> lostUpdates(Map<Integer, Integer> acknowledged, Map<Integer, Integer> stored) {
        List<String> lost = new ArrayList<>();
        for (Map.Entry<Integer, Integer> e : acknowledged.entrySet()) {
            Integer value = stored.get(e.getKey());
            if (!e.getValue().equals(value)) lost.add("id " + e.getKey() + ": acknowledged " + e.getValue() + ", stored " + value);
        }
        return lost;
    }

    /**
     * Asserts {@code node} is a World object, exactly {@code {"id":I,"randomNumber":N}} with both in 1..10000.
     *
     * @return {id, randomNumber}
     */
    static int[] assertWorld(JsonNode node) {
        assertTrue(node.isObject(), () -> "not an object: " + node);
        assertEquals(Arrays.asList("id", "randomNumber"), fieldNames(node), () -> "fields of " + node);
        JsonNode id = node.get("id");
        JsonNode n = node.get("randomNumber");
        assertTrue(id.isInt() && id.intValue() >= 1 && id.intValue() <= 10_000, () -> "id not in 1..10000: " + node);
        assertTrue(n.isInt() && n.intValue() >= 1 && n.intValue() <= 10_000, () -> "randomNumber not in 1..10000: " + node);
        return new int[] {id.intValue(), n.intValue()};
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }
}

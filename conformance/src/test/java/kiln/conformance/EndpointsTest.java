package kiln.conformance;

import static kiln.conformance.Contract.assertWorld;
import static kiln.conformance.Contract.get;
import static kiln.conformance.Contract.getJson;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import kiln.demo.Bodies;
import kiln.demo.Endpoint;
import kiln.demo.Endpoints;
import kiln.demo.Fortune;
import kiln.http.Http;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every endpoint's status, Content-Type and body (TechEmpower test types 1-6 and /hello), through
 * java.net.http.HttpClient. Headers byte for byte are {@link HeadersTest}'s; connections
 * {@link ConnectionsTest}'s; durability {@link DurabilityTest}'s.
 */
class EndpointsTest {
    @RegisterExtension
    static final Servers SERVERS = new Servers("EndpointsTest").withQuietCarriers();

    private static final Pattern WORLD_BYTES = Pattern.compile("\\{\"id\":\\d+,\"randomNumber\":\\d+\\}");

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void indexIsHtmlLinkingEveryEndpoint(FrontEnd fe) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/");
        assertEquals(200, r.statusCode());
        assertEquals(Http.TEXT_HTML, contentType(r));
        assertArrayEquals(Endpoints.indexPage(), r.body(), "body is the registry's index page");
        String html = text(r);
        for (Endpoint e : Endpoints.ALL) {
            if (!e.path.equals("/")) assertTrue(html.contains("href=\"" + e.example + "\""), () -> "no link to " + e + " in " + html);
        }
    }

    /** The registry's walk: every endpoint it lists answers its example with 200 on every front end. */
    static Stream<Arguments> registry() {
        return FrontEnd.cross(Endpoints.ALL.stream().map(e -> new Object[] {e.method, e.example}).toArray(Object[][]::new));
    }

    @ParameterizedTest(name = "{0} {1} {2}")
    @MethodSource("registry")
    void everyRegistryEndpointIsServed(FrontEnd fe, String method, String example) throws Exception {
        if (example.endsWith("/events")) {  // server-sent events: the stream never ends, so its head and first part
            try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
                RawResponse head = c.send(RawConnection.get(example)).readStreamHead();
                assertEquals(200, head.status, () -> fe + " " + example + ": " + head.head);
                assertEquals("retry: 2000\n\n", c.readChunk());
            }
            return;
        }
        HttpResponse<byte[]> r = Contract.send(SERVERS.get(fe), method, example);
        assertEquals(200, r.statusCode(), () -> fe + " " + method + " " + example + " answered " + r.statusCode() + ": " + text(r));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void plaintextIsHelloWorld(FrontEnd fe) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/plaintext");
        assertEquals(200, r.statusCode());
        assertEquals("text/plain; charset=UTF-8", contentType(r));
        assertEquals("Hello, World!", text(r));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void queryStringIsNotPartOfThePath(FrontEnd fe) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/plaintext?foo=bar&x");
        assertEquals(200, r.statusCode());
        assertEquals("Hello, World!", text(r));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void jsonIsTheHelloMessageExactly(FrontEnd fe) throws Exception {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/json");
        assertEquals(200, r.statusCode());
        assertEquals("application/json", contentType(r));
        assertEquals("{\"message\":\"Hello, World!\"}", text(r));
        JsonNode json = Contract.JSON.readTree(r.body());
        assertTrue(json.isObject() && json.size() == 1, () -> "one field: " + json);
        assertEquals("Hello, World!", json.get("message").textValue());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void dbIsOneWorldObject(FrontEnd fe) throws Exception {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/db");
        assertEquals(200, r.statusCode());
        assertEquals("application/json", contentType(r));
        assertTrue(WORLD_BYTES.matcher(text(r)).matches(), () -> "body is {\"id\":I,\"randomNumber\":N}: " + text(r));
        assertWorld(Contract.JSON.readTree(r.body()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void dbPicksRandomIds(FrontEnd fe) {
        ServerProcess s = SERVERS.get(fe);
        Set<Integer> ids = new HashSet<>();
        for (int i = 0; i < 20; i++) ids.add(assertWorld(getJson(s, "/db"))[0]);
        // 20 draws from 10,000 ids are all equal with probability 1e-76.
        assertTrue(ids.size() > 1, () -> "20 /db requests all returned id " + ids);
    }

    /** TechEmpower test type 3: queries clamped to 1..500; missing, empty or not a number means 1. */
    static Stream<Arguments> queriesClampCases() {
        return FrontEnd.cross(new Object[][] {
            {"?queries=2", 2}, {"?queries=0", 1}, {"?queries=foo", 1}, {"?queries=501", 500},
            {"?queries=500", 500}, {"?queries=-3", 1}, {"?queries=", 1}, {"", 1}});
    }

    @ParameterizedTest(name = "{0} /queries{1} -> {2} rows")
    @MethodSource("queriesClampCases")
    void queriesReturnsClampedNumberOfWorlds(FrontEnd fe, String query, int rows) {
        JsonNode json = getJson(SERVERS.get(fe), "/queries" + query);
        assertTrue(json.isArray(), () -> "not an array: " + json);
        assertEquals(rows, json.size(), "rows");
        for (JsonNode w : json) assertWorld(w);
    }

    /** TechEmpower test type 5: same clamp as /queries. */
    static Stream<Arguments> updatesClampCases() {
        return FrontEnd.cross(new Object[][] {
            {"?queries=2", 2}, {"?queries=0", 1}, {"?queries=foo", 1}, {"?queries=501", 500}, {"?queries=", 1}, {"", 1}});
    }

    @ParameterizedTest(name = "{0} /updates{1} -> {2} rows")
    @MethodSource("updatesClampCases")
    void updatesReturnsClampedNumberOfUpdatedWorlds(FrontEnd fe, String query, int rows) {
        JsonNode json = getJson(SERVERS.get(fe), "/updates" + query);
        assertTrue(json.isArray(), () -> "not an array: " + json);
        assertEquals(rows, json.size(), "rows");
        for (JsonNode w : json) assertWorld(w);
    }

    /**
     * An /updates answer comes after the commit, so a later read sees it: ids that a later /queries
     * happens to draw must hold the last number /updates returned for them. Two /updates of 500 and
     * two /queries of 500 share about 100 ids; none in common fails the test instead of passing it.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void updatesAreVisibleToLaterQueries(FrontEnd fe) {
        ServerProcess s = SERVERS.get(fe);
        Map<Integer, Integer> updated = new HashMap<>();
        for (int i = 0; i < 2; i++) {
            for (JsonNode w : getJson(s, "/updates?queries=500")) {
                int[] row = assertWorld(w);
                updated.put(row[0], row[1]);
            }
        }
        int checked = 0;
        List<String> stale = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            for (JsonNode w : getJson(s, "/queries?queries=500")) {
                int[] row = assertWorld(w);
                Integer expected = updated.get(row[0]);
                if (expected == null) continue;
                checked++;
                if (expected != row[1]) stale.add("id " + row[0] + ": updated to " + expected + ", read " + row[1]);
            }
        }
        int common = checked;
        assertTrue(common > 0, "no id in common between /updates and /queries; cannot check");
        assertTrue(stale.isEmpty(), () -> stale.size() + " of " + common + " reads are stale: " + stale);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void fortunesIsTheSortedEscapedTable(FrontEnd fe) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/fortunes");
        assertEquals(200, r.statusCode());
        assertEquals("text/html; charset=UTF-8", contentType(r));
        String html = text(r);

        List<Fortune> rows = new ArrayList<>();
        Matcher m = Pattern.compile("<tr><td>(\\d+)</td><td>(.*?)</td></tr>").matcher(html);
        while (m.find()) rows.add(new Fortune(Integer.parseInt(m.group(1)), unescape(m.group(2))));
        assertEquals(13, rows.size(), () -> "rows in " + html);

        Map<Integer, String> byId = new HashMap<>();
        for (Fortune f : rows) byId.put(f.id, f.message);
        assertEquals(Bodies.ADDED_FORTUNE, byId.get(0), "the fortune added at request time, id 0");
        for (Fortune f : Contract.storedFortunes()) assertEquals(f.message, byId.get(f.id), "fortune " + f.id);

        for (int i = 1; i < rows.size(); i++) {
            int at = i;
            assertTrue(rows.get(i - 1).message.compareTo(rows.get(i).message) <= 0,
                () -> "not sorted by message at row " + at + ": " + rows);
        }
        assertFalse(html.contains("<script>"), "the <script> fortune must be HTML-escaped");
        assertTrue(html.contains("&lt;script&gt;"), "the <script> fortune is present, escaped");
        byte[] japanese = Contract.FORTUNES.get(11).getBytes(StandardCharsets.UTF_8);
        assertTrue(indexOf(r.body(), japanese) >= 0, "the Japanese fortune, UTF-8 encoded");
        assertArrayEquals(Bodies.fortunesHtml(Contract.storedFortunes()), r.body(), "body is Bodies.fortunesHtml of the stored rows");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void helloIsTenBytes(FrontEnd fe) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/hello");
        assertEquals(200, r.statusCode());
        assertEquals("text/plain; charset=UTF-8", contentType(r));
        assertEquals("HelloWorld", text(r));
        assertEquals(10, r.body().length);
    }

    /** Only a lower bound: the sleep must happen. Upper bounds on timing fail on a busy machine. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void helloDelayAnswersNoSoonerThanTheDelay(FrontEnd fe) {
        ServerProcess s = SERVERS.get(fe);
        get(s, "/hello");
        long start = System.nanoTime();
        HttpResponse<byte[]> r = get(s, "/hello?delay=50");
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(200, r.statusCode());
        assertEquals("HelloWorld", text(r));
        assertTrue(ms >= 50, () -> "answered after " + ms + " ms");
    }

    static Stream<Arguments> badDelays() {
        return FrontEnd.cross(new Object[][] {{"abc"}, {"-1"}, {"60001"}, {"1.5"}});
    }

    /** Params.delayMs: not an integer in 0..60000 is the client's error. */
    @ParameterizedTest(name = "{0} /hello?delay={1} -> 400")
    @MethodSource("badDelays")
    void helloBadDelayIs400(FrontEnd fe, String delay) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/hello?delay=" + delay);
        assertEquals(400, r.statusCode(), () -> text(r));
        assertEquals("text/plain; charset=UTF-8", contentType(r));
        assertTrue(text(r).startsWith("400 Bad Request") && text(r).endsWith("\n"), () -> "Bodies.error body: " + text(r));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void helloEmptyDelayIsNoDelay(FrontEnd fe) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), "/hello?delay=");
        assertEquals(200, r.statusCode());
        assertEquals("HelloWorld", text(r));
    }

    static Stream<Arguments> unknownPaths() {
        return FrontEnd.cross(new Object[][] {{"/nope"}, {"/plaintext/"}, {"/PLAINTEXT"}, {"/index.html"}, {"/json/x"},
            {"/worlds/"}, {"/worlds/0"}, {"/worlds/abc"}, {"/worlds/1/2"}});
    }

    /** A path parameter, on every front end: /worlds/{id} reads its segment, percent-decoded. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void worldsByIdReadsThePathParameter(FrontEnd fe) throws Exception {
        ServerProcess s = SERVERS.get(fe);
        assertEquals(7, assertWorld(getJson(s, "/worlds/7"))[0]);
        assertEquals(42, assertWorld(getJson(s, "/worlds/%34%32"))[0], "percent-decoded");
        assertEquals(10000, assertWorld(getJson(s, "/worlds/10000"))[0]);
    }

    @ParameterizedTest(name = "{0} GET {1} -> 404")
    @MethodSource("unknownPaths")
    void unknownPathIs404(FrontEnd fe, String path) {
        HttpResponse<byte[]> r = get(SERVERS.get(fe), path);
        assertEquals(404, r.statusCode(), () -> text(r));
        assertEquals("text/plain; charset=UTF-8", contentType(r));
        assertTrue(text(r).startsWith("404 Not Found") && text(r).endsWith("\n"), () -> "Bodies.error body: " + text(r));
    }

    private static String contentType(HttpResponse<?> r) {
        List<String> all = r.headers().allValues("Content-Type");
        assertEquals(1, all.size(), () -> "one Content-Type: " + all);
        return all.get(0);
    }

    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    /** Undoes the escapes the OWASP encoder's forHtml produces. */
    private static String unescape(String html) {
        return html.replace("&lt;", "<").replace("&gt;", ">").replace("&#34;", "\"").replace("&#39;", "'")
            .replace("&quot;", "\"").replace("&amp;", "&");
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) continue outer;
            }
            return i;
        }
        return -1;
    }
}

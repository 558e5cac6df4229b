package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import kiln.demo.Bodies;
import kiln.demo.Endpoints;
import kiln.http.Http;
import kiln.server.Metrics;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The response head, byte for byte: the status line, always {@code HTTP/1.1} (RFC 9110 section
 * 6.2), then exactly Server, Date, Content-Type[, Allow], Content-Length[, Connection] (see
 * {@link Http}), so that a benchmark response is the same size from every front end.
 *
 * <p>Each front end's head must equal a template built from app's constants (Date value aside);
 * with two or more front ends under test their heads must also equal each other's, which pins what
 * the template leaves open (the detail text of error bodies and so their Content-Length). Where a
 * front end has a {@link Deviation}, both checks use the weaker property the deviation states.
 */
class HeadersTest {
    @RegisterExtension
    static final Servers SERVERS = new Servers("HeadersTest");

    private static final String TEXT = Http.TEXT_PLAIN;
    private static final String PROBLEM = Http.APPLICATION_PROBLEM_JSON;

    /** How a case's body is checked. */
    enum Body {
        /** Known bytes: the head, Content-Length included, must match exactly. */
        FIXED,
        /** Random rows (/db, /queries, /updates), a scrape (/metrics): length varies, so across front ends only field names, order and Content-Type compare. */
        VARIES,
        /** An error body "NNN Reason[: detail]\n" from the application (404, 405): the detail must be the same for all front ends. */
        ERROR,
        /**
         * An error body "NNN Reason[: detail]\n" for a request that could not be parsed: the detail
         * names what each parser found wrong, so across front ends only the shape compares.
         */
        PARSE_ERROR,
        /**
         * An error as RFC 9457 problem details, for a client whose Accept prefers JSON:
         * {@code {"type":"about:blank","title":REASON,"status":NNN,"detail":...}}; the detail must be
         * the same for all front ends.
         */
        PROBLEM
    }

    /** One request and the response the contract prescribes for it. */
    static final class Case {
        final String label;
        final String request;
        final int status;
        final String contentType;
        final Body kind;
        final byte[] body;
        final String[] extraFields;

        Case(String label, String request, int status, String contentType, Body kind, byte[] body, String... extraFields) {
            this.label = label;
            this.request = request;
            this.status = status;
            this.contentType = contentType;
            this.kind = kind;
            this.body = body;
            this.extraFields = extraFields;
        }

        @Override
        public String toString() {
            return label;
        }
    }

    /** What every answer read from the database carries: no cache may keep it. */
    private static final String NO_STORE = "Cache-Control: no-store";

    static final List<Case> CASES = List.of(
        ok("GET /", "/", Http.TEXT_HTML, Endpoints.indexPage()),
        ok("GET /plaintext", "/plaintext", TEXT, Bodies.PLAINTEXT),
        ok("GET /json", "/json", Http.APPLICATION_JSON, Bodies.helloJson()),
        ok("GET /hello", "/hello", TEXT, Bodies.HELLO),
        new Case("GET /fortunes", RawConnection.get("/fortunes"), 200, Http.TEXT_HTML, Body.FIXED,
            Bodies.fortunesHtml(Contract.storedFortunes()), NO_STORE),
        new Case("GET /db", RawConnection.get("/db"), 200, Http.APPLICATION_JSON, Body.VARIES, null, NO_STORE),
        new Case("GET /worlds/42", RawConnection.get("/worlds/42"), 200, Http.APPLICATION_JSON, Body.VARIES, null, NO_STORE),
        new Case("GET /queries?queries=3", RawConnection.get("/queries?queries=3"), 200, Http.APPLICATION_JSON, Body.VARIES, null, NO_STORE),
        new Case("GET /updates?queries=2", RawConnection.get("/updates?queries=2"), 200, Http.APPLICATION_JSON, Body.VARIES, null, NO_STORE),
        new Case("GET /cached-queries?count=2", RawConnection.get("/cached-queries?count=2"), 200, Http.APPLICATION_JSON, Body.VARIES,
            null, NO_STORE),
        new Case("GET /metrics", RawConnection.get("/metrics"), 200, Metrics.CONTENT_TYPE, Body.VARIES, null, NO_STORE),
        new Case("GET /nope (404)", RawConnection.get("/nope"), 404, TEXT, Body.ERROR, null),
        new Case("POST /plaintext (405)", "POST /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
            405, TEXT, Body.ERROR, null, "Allow: GET, HEAD, OPTIONS"),
        // RFC 9110 section 9.3.7: 200, Allow, Content-Length: 0; the asterisk-form asks about the server (RFC 9112 section 3.2.4)
        new Case("OPTIONS /plaintext", "OPTIONS /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200, TEXT, Body.FIXED, new byte[0],
            "Allow: GET, HEAD, OPTIONS"),
        new Case("OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200, TEXT, Body.FIXED, new byte[0],
            "Allow: GET, HEAD, OPTIONS"),
        new Case("HTTP/1.0 keep-alive GET /plaintext", "GET /plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            200, TEXT, Body.FIXED, Bodies.PLAINTEXT, "Connection: keep-alive"),
        new Case("HTTP/1.0 GET /plaintext", "GET /plaintext HTTP/1.0\r\n\r\n",
            200, TEXT, Body.FIXED, Bodies.PLAINTEXT, "Connection: close"),
        new Case("HTTP/1.1 Connection: close GET /plaintext", "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            200, TEXT, Body.FIXED, Bodies.PLAINTEXT, "Connection: close"),
        new Case("GARBAGE (400)", "GARBAGE\r\n\r\n", 400, TEXT, Body.PARSE_ERROR, null, "Connection: close"),
        // Errors negotiate (RFC 9457): JSON problem details when Accept prefers JSON, plain text otherwise (curl's */*)
        new Case("GET /nope Accept: application/json (404 problem)", withAccept("GET /nope", "application/json"), 404, PROBLEM,
            Body.PROBLEM, null),
        new Case("POST /plaintext Accept: application/json (405 problem)",
            "POST /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Length: 0\r\n\r\n",
            405, PROBLEM, Body.PROBLEM, null, "Allow: GET, HEAD, OPTIONS"),
        new Case("GET /hello?delay=abc Accept: application/problem+json (400 problem)",
            withAccept("GET /hello?delay=abc", "application/problem+json"), 400, PROBLEM, Body.PROBLEM, null),
        new Case("GET /nope Accept: */* (404 text)", withAccept("GET /nope", "*/*"), 404, TEXT, Body.ERROR, null),
        new Case("GET /hello?delay=abc Accept: a browser's (400 text)",
            withAccept("GET /hello?delay=abc", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), 400, TEXT, Body.ERROR, null));

    private static String withAccept(String requestLine, String accept) {
        return requestLine + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: " + accept + "\r\n\r\n";
    }

    private static Case ok(String label, String target, String contentType, byte[] body) {
        return new Case(label, RawConnection.get(target), 200, contentType, Body.FIXED, body);
    }

    static Stream<Arguments> serverCases() {
        Object[][] rows = new Object[CASES.size()][];
        for (int i = 0; i < rows.length; i++) rows[i] = new Object[] {CASES.get(i)};
        return FrontEnd.cross(rows);
    }

    static List<Case> cases() {
        return CASES;
    }

    private static RawResponse fetch(FrontEnd fe, Case c) {
        try (RawConnection conn = RawConnection.open(SERVERS.get(fe))) {
            return conn.exchange(c.request);
        }
    }

    /**
     * Field names and order, Server, Date, Content-Type, Content-Length = body bytes; then the whole
     * head against the template. A request the front end's parser rejects itself
     * ({@link Deviation#PARSE_ERRORS_BODILESS_400}) gets that deviation's fixed bodiless 400 instead.
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("serverCases")
    void headIsTheContractTemplate(FrontEnd fe, Case c) {
        RawResponse r = fetch(fe, c);
        if (c.kind == Body.PARSE_ERROR && fe.has(Deviation.PARSE_ERRORS_BODILESS_400)) {
            Contract.assertBodiless400(fe, r);
            return;
        }
        assertEquals(Contract.statusLine(c.status), r.statusLine, () -> "status line of\n" + r);
        Contract.assertHeaders(fe, r, c.contentType, c.extraFields);
        switch (c.kind) {
            case FIXED:
                assertArrayEquals(c.body, r.body, () -> "body of\n" + r);
                break;
            case ERROR:
            case PARSE_ERROR:
                String start = c.status + " " + Http.reason(c.status);
                assertTrue(Pattern.matches(Pattern.quote(start) + "(: [^\n]+)?\n", r.bodyText()),
                    () -> "error body is Bodies.error(" + c.status + ", ...): " + r.bodyText());
                break;
            case PROBLEM:
                String problem = "{\"type\":\"about:blank\",\"title\":\"" + Http.reason(c.status) + "\",\"status\":" + c.status + ",\"detail\":\"";
                assertTrue(r.bodyText().startsWith(problem) && r.bodyText().endsWith("\"}"),
                    () -> "problem details (RFC 9457) " + problem + "...\"}: " + r.bodyText());
                break;
            case VARIES:
                if (c.contentType.equals(Metrics.CONTENT_TYPE)) {
                    assertTrue(r.bodyText().startsWith("# HELP "), () -> "Prometheus text body: " + r.bodyText());
                    break;
                }
                boolean oneRow = c.label.contains("/db") || c.label.contains("/worlds/");
                assertTrue(r.bodyText().startsWith(oneRow ? "{" : "["), () -> "JSON body: " + r.bodyText());
                break;
            default:
                throw new AssertionError(c.kind);
        }
        int length = c.kind == Body.FIXED ? c.body.length : r.body.length;
        Contract.assertHead(fe, r, c.status, c.contentType, length, c.extraFields);
    }

    /**
     * Every front end answers the same bytes (Date aside). Compared in classes: front ends whose
     * parser answers a rejected request itself ({@link Deviation#PARSE_ERRORS_BODILESS_400}) with
     * each other, the rest with each other; a pair where either side has
     * {@link Deviation#HEADER_ORDER_HASHED} compares status line plus sorted header lines.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void headsAreIdenticalAcrossFrontEnds(Case c) {
        List<FrontEnd> servers = FrontEnd.underTest();
        assumeTrue(servers.size() >= 2, "not applicable with one front end under test (-Dkiln.servers);"
            + " headIsTheContractTemplate still checks its head byte for byte");
        Map<FrontEnd, RawResponse> answers = new LinkedHashMap<>();
        for (FrontEnd fe : servers) answers.put(fe, fetch(fe, c));
        Map<Boolean, FrontEnd> references = new HashMap<>();
        List<String> differences = new ArrayList<>();
        for (Map.Entry<FrontEnd, RawResponse> e : answers.entrySet()) {
            FrontEnd fe = e.getKey();
            FrontEnd ref = references.computeIfAbsent(c.kind == Body.PARSE_ERROR && fe.has(Deviation.PARSE_ERRORS_BODILESS_400), k -> fe);
            RawResponse r = e.getValue();
            RawResponse reference = answers.get(ref);
            boolean anyOrder = fe.has(Deviation.HEADER_ORDER_HASHED) || ref.has(Deviation.HEADER_ORDER_HASHED);
            boolean same;
            if (c.kind == Body.VARIES || c.kind == Body.PARSE_ERROR) {
                same = r.statusLine.equals(reference.statusLine) && names(r, anyOrder).equals(names(reference, anyOrder))
                    && Objects.equals(r.header("Content-Type"), reference.header("Content-Type"));
            } else {
                same = comparable(r, anyOrder).equals(comparable(reference, anyOrder)) && Arrays.equals(r.body, reference.body);
            }
            if (!same) differences.add(fe.id + " answered\n" + r + "\nbut " + ref.id + " answered\n" + reference);
        }
        assertTrue(differences.isEmpty(), () -> String.join("\n", differences));
    }

    private static List<String> names(RawResponse r, boolean anyOrder) {
        return anyOrder ? Contract.sorted(r.headerNames()) : r.headerNames();
    }

    /** @return the status line and the header lines (Date's value aside), sorted when {@code anyOrder} */
    private static List<String> comparable(RawResponse r, boolean anyOrder) {
        List<String> lines = new ArrayList<>();
        lines.add(r.statusLine);
        lines.addAll(anyOrder ? Contract.sorted(r.fieldLinesWithoutDate()) : r.fieldLinesWithoutDate());
        return lines;
    }
}

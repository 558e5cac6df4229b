package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import kiln.http.HttpException;
import kiln.http.Request;

class RequestParserTest {

    private static RequestParser.Parsed parse(String s) {
        byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
        return RequestParser.parse(b, 0, b.length);
    }

    private static int errorStatus(String s) {
        return assertThrows(HttpException.class, () -> parse(s)).status();
    }

    @Test
    void parsesRequestLineHeadersAndQuery() {
        RequestParser.Parsed p = parse("GET /queries?queries=5&x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  v  \r\n\r\n");
        assertNotNull(p);
        Request r = p.request;
        assertEquals("GET", r.method());
        assertEquals("/queries", r.path());
        assertEquals("queries=5&x=1", r.rawQuery());
        assertEquals("5", r.param("queries"));
        assertEquals("v", r.header("x-thing"));
        assertEquals(1, r.minorVersion());
        assertTrue(r.keepAlive());
        assertEquals(p.length, "GET /queries?queries=5&x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  v  \r\n\r\n".length());
    }

    /** RFC 9110 section 10.1.1: 100 Continue once the head asks for it and content is awaited. */
    @Test
    void expect100ContinueIsTakenOnceWhenTheContentIsAwaited() {
        byte[] head = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);
        RequestParser.Progress p = new RequestParser.Progress();
        assertNull(RequestParser.parse(head, 0, head.length - 3, p));
        assertFalse(p.takeContinue(), "not before the head is complete");
        assertNull(RequestParser.parse(head, 0, head.length, p));
        assertTrue(p.takeContinue());
        assertFalse(p.takeContinue(), "once");
        for (String other : new String[] {
            "POST /x HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",   // HTTP/1.0: no 1xx
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n",               // not asked
            "GET /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\nGET"}) {       // no content: answered
            byte[] b = other.getBytes(StandardCharsets.ISO_8859_1);
            RequestParser.Progress q = new RequestParser.Progress();
            RequestParser.parse(b, 0, b.length, q);
            assertFalse(q.takeContinue(), other);
        }
        assertEquals(413, errorStatus("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 900000\r\nExpect: 100-continue\r\n\r\n"),
            "too large: the final status at once, no 100");
    }

    @Test
    void incompleteRequestsAskForMoreBytes() {
        String full = "GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n";
        for (int i = 0; i < full.length(); i++) {
            assertNull(parse(full.substring(0, i)), "prefix of " + i + " bytes");
        }
        assertNotNull(parse(full));
    }

    @Test
    void pipelinedRequestsParseOneAtATime() {
        String one = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n";
        byte[] b = (one + one.replace("/a", "/b")).getBytes(StandardCharsets.US_ASCII);
        RequestParser.Parsed first = RequestParser.parse(b, 0, b.length);
        RequestParser.Parsed second = RequestParser.parse(b, first.length, b.length);
        assertEquals("/a", first.request.path());
        assertEquals("/b", second.request.path());
        assertEquals(b.length, first.length + second.length);
    }

    static Stream<Arguments> keepAliveCases() {
        return Stream.of(
            Arguments.of("HTTP/1.1", "", true),
            Arguments.of("HTTP/1.1", "Connection: close\r\n", false),
            Arguments.of("HTTP/1.1", "Connection: Keep-Alive\r\n", true),
            Arguments.of("HTTP/1.0", "", false),
            Arguments.of("HTTP/1.0", "Connection: Keep-Alive\r\n", true),
            Arguments.of("HTTP/1.0", "Connection: keep-alive, close\r\n", false));
    }

    @ParameterizedTest
    @MethodSource("keepAliveCases")
    void keepAliveFollowsRfc9112Section9(String version, String header, boolean keepAlive) {
        RequestParser.Parsed p = parse("GET / " + version + "\r\nHost: a\r\n" + header + "\r\n");
        assertEquals(keepAlive, p.request.keepAlive());
    }

    /** Field names are case-insensitive (RFC 9110 section 5.1), in the usual spellings, which the parser shares, and in any other. */
    @Test
    void fieldsFrameTheRequestAndAreFoundInAnyCase() {
        String request = "POST /x HTTP/1.1\r\nhOsT: a\r\ncOnTeNt-LeNgTh: 2\r\nCONNECTION: close\r\n"
            + "user-agent: u\r\nAccept: */*\r\nX-REAL-IP: 10.0.0.1\r\n\r\nhi";
        RequestParser.Parsed p = parse(request + "GET");
        assertEquals(request.length(), p.length);
        Request r = p.request;
        assertEquals("hi", new String(r.body(), StandardCharsets.US_ASCII));
        assertFalse(r.keepAlive());
        assertEquals("a", r.header("Host"));
        assertEquals("u", r.header("User-Agent"));
        assertEquals("*/*", r.header("accept"));
        assertEquals("10.0.0.1", r.header("x-real-ip"));
        assertEquals(400, errorStatus("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\ncontent-length: 2\r\n\r\nab"));
        assertEquals(400, errorStatus("GET / HTTP/1.1\r\nHost: a\r\nHOST: b\r\n\r\n"));
        assertEquals(400, errorStatus("POST /x HTTP/1.1\r\nhost: a\r\ntransfer-ENCODING: chunked\r\nContent-length: 2\r\n\r\n"));
        assertEquals(400, errorStatus("GET / HTTP/1.1\r\nHosts: a\r\n\r\n"), "Hosts is not Host");
        assertEquals(400, errorStatus("GET / HTTP/1.1\r\nhost: a b\r\n\r\n"));
        assertTrue(parse("GET / HTTP/1.0\r\nconnection: KEEP-ALIVE\r\n\r\n").request.keepAlive());
    }

    @Test
    void bodyByContentLengthIsConsumed() {
        RequestParser.Parsed p = parse("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET");
        assertEquals("hello", new String(p.request.body(), StandardCharsets.US_ASCII));
        assertEquals("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello".length(), p.length);
        assertNull(parse("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhel"));
    }

    @Test
    void chunkedBodyIsDecoded() {
        RequestParser.Parsed p = parse("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n");
        assertEquals("hello world", new String(p.request.body(), StandardCharsets.US_ASCII));
        assertNull(parse("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"));
    }

    @Test
    void chunkExtensionsMayHaveWhitespaceAroundSemicolonAndEquals() {
        // RFC 9112 section 7.1.1: chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ); sizes may have leading zeros
        RequestParser.Parsed p = parse("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5 ;a\t; b = \"q \\\" x\"\r\nhello\r\n0000000000006;c=d\r\n world\r\n0 ; e\r\n\r\n");
        assertEquals("hello world", new String(p.request.body(), StandardCharsets.US_ASCII));
    }

    @Test
    void leadingEmptyLinesAreIgnored() {
        assertEquals("/a", parse("\r\n\r\nGET /a HTTP/1.1\r\nHost: a\r\n\r\n").request.path());
    }

    @Test
    void aLoneCrBeforeTheRequestLineAsksForMore() {
        // found by RequestParserFuzzTest: the CR of a leading empty line, read on its own, was a 400
        assertNull(parse("\r"));
        assertNull(parse("\r\n\r"));
        assertEquals("/a", parse("\r\n\r\nGET /a HTTP/1.1\r\nHost: a\r\n\r\n").request.path());
    }

    @Test
    void aHeaderSectionExactlyAtTheLimitAsksForMoreUntilItsEmptyLine() {
        // found by RequestParserFuzzTest: with the field lines exactly MAX_HEADER_BYTES long, the
        // head without its final CRLF (or with only its CR) was a 431 although the whole head parses
        String host = "Host: a\r\n";
        String filler = "X: " + "v".repeat(RequestParser.MAX_HEADER_BYTES - host.length() - "X: \r\n".length()) + "\r\n";
        String head = "GET / HTTP/1.1\r\n" + host + filler;
        assertEquals(RequestParser.MAX_HEADER_BYTES, host.length() + filler.length());
        assertNull(parse(head));
        assertNull(parse(head + "\r"));
        assertEquals(head.length() + 2, parse(head + "\r\n").length);
    }

    @Test
    void absoluteFormTargetRoutesByPath() {
        Request r = parse("GET http://example.com:8080/db?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n").request;
        assertEquals("/db", r.path());
        assertEquals("x=1", r.rawQuery());
    }

    /** RFC 3986 section 6.2.2 via Paths: the request's path is its normal form; the target stays as sent. */
    @Test
    void pathIsNormalisedAndTheAsteriskFormIsOnlyForOptions() {
        Request r = parse("GET /a/../%70laintext?q=%70 HTTP/1.1\r\nHost: a\r\n\r\n").request;
        assertEquals("/plaintext", r.path());
        assertEquals("q=%70", r.rawQuery(), "the query is not the path's business");
        assertEquals("/a/../%70laintext?q=%70", r.target());
        assertEquals("/db", parse("GET http://example.com/./db HTTP/1.1\r\nHost: example.com\r\n\r\n").request.path());
        assertEquals("*", parse("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n").request.path());
        assertEquals(400, errorStatus("GET * HTTP/1.1\r\nHost: a\r\n\r\n"));
        assertEquals(400, errorStatus("GET /../plaintext HTTP/1.1\r\nHost: a\r\n\r\n"));
        assertEquals(400, errorStatus("GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n"));
    }

    private static final String CHUNKED = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";

    static Stream<Arguments> malformed() {
        return Stream.of(
            Arguments.of("garbage line", "GARBAGE\r\n\r\n"),
            Arguments.of("space before method", " GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Arguments.of("bad method char", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Arguments.of("missing version", "GET /\r\nHost: a\r\n\r\n"),
            Arguments.of("lowercase version", "GET / http/1.1\r\nHost: a\r\n\r\n"),
            Arguments.of("two spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Arguments.of("control byte in target", "GET /a\u0001b HTTP/1.1\r\nHost: a\r\n\r\n"),
            Arguments.of("non-ascii target", "GET /caf\u00e9 HTTP/1.1\r\nHost: a\r\n\r\n"),
            Arguments.of("relative target", "GET plaintext HTTP/1.1\r\nHost: a\r\n\r\n"),
            Arguments.of("header without colon", "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n"),
            Arguments.of("space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n"),
            Arguments.of("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n"),
            Arguments.of("control byte in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\u0000b\r\n\r\n"),
            Arguments.of("bare LF", "GET / HTTP/1.1\nHost: a\n\n"),
            Arguments.of("bare CR", "GET / HTTP/1.1\rHost: a\r\n\r\n"),
            Arguments.of("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n"),
            Arguments.of("two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
            Arguments.of("Host with a space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
            Arguments.of("Host with a path", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"),
            Arguments.of("Host with userinfo", "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n"),
            Arguments.of("Host with a letter in its port", "GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n"),
            Arguments.of("Host with an unclosed IP literal", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n"),
            Arguments.of("Host with a bad percent-encoding", "GET / HTTP/1.1\r\nHost: a%zz\r\n\r\n"),
            Arguments.of("invalid Host in HTTP/1.0", "GET / HTTP/1.0\r\nHost: a b\r\n\r\n"),
            Arguments.of("chunked then identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"),
            Arguments.of("chunked in one field, identity in another",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n"),
            Arguments.of("identity alone", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n"),
            Arguments.of("chunked twice", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"),
            Arguments.of("negative Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"),
            Arguments.of("non-numeric Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n"),
            Arguments.of("overflowing Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n"),
            Arguments.of("conflicting Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
            Arguments.of("Content-Length with chunked", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            Arguments.of("chunked in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            Arguments.of("bad chunk size", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            Arguments.of("chunk without CRLF", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n"),
            Arguments.of("whitespace after chunk size", CHUNKED + "1 \r\na\r\n0\r\n\r\n"),
            Arguments.of("chunk extension without name", CHUNKED + "1;\r\na\r\n0\r\n\r\n"),
            Arguments.of("chunk extension without value", CHUNKED + "1;a=\r\na\r\n0\r\n\r\n"),
            Arguments.of("chunk extension with space in name", CHUNKED + "1;a b\r\na\r\n0\r\n\r\n"),
            Arguments.of("unterminated quoted chunk extension", CHUNKED + "1;a=\"x\r\na\r\n0\r\n\r\n"),
            Arguments.of("control byte in quoted chunk extension", CHUNKED + "1;a=\"\u0001\"\r\na\r\n0\r\n\r\n"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformed")
    void malformedRequestsAre400(String name, String request) {
        assertEquals(400, errorStatus(request), name);
    }

    /** What a connection needs to answer a refused HEAD with its head only (RFC 9110 section 9.3.2). */
    @Test
    void aRefusedHeadIsKnownAsOne() {
        for (String refused : new String[] {
                "HEAD / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000000\r\n\r\n",   // 413
                "HEAD / HTTP/1.1\r\nHost: a b\r\n\r\n",                                // 400
                "HEAD / HTTP/2.0\r\nHost: a\r\n\r\n"}) {                               // 505
            RequestParser.Progress progress = new RequestParser.Progress();
            byte[] b = refused.getBytes(StandardCharsets.ISO_8859_1);
            assertThrows(HttpException.class, () -> RequestParser.parse(b, 0, b.length, progress));
            assertTrue(progress.refusedHead(), refused);
        }
        RequestParser.Progress get = new RequestParser.Progress();
        byte[] b = "GET / HTTP/1.1\r\nHost: a b\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);
        assertThrows(HttpException.class, () -> RequestParser.parse(b, 0, b.length, get));
        assertFalse(get.refusedHead());
    }

    @Test
    void anotherMajorVersionIs505() {
        assertEquals(505, errorStatus("GET / HTTP/2.0\r\nHost: a\r\n\r\n"));
        assertEquals(505, errorStatus("GET / HTTP/0.9\r\nHost: a\r\n\r\n"));
        assertEquals(505, errorStatus("GET / HTTP/3.1\r\nHost: a\r\n\r\n"));
    }

    /** RFC 9110 section 2.5: a later minor version of HTTP/1 is processed as HTTP/1.1, the highest implemented. */
    @Test
    void aLaterMinorVersionIsServedAsHttp11() {
        assertEquals(1, parse("GET / HTTP/1.2\r\nHost: a\r\n\r\n").request.minorVersion());
        assertEquals(1, parse("GET / HTTP/1.9\r\nHost: a\r\n\r\n").request.minorVersion());
        assertEquals(400, errorStatus("GET / HTTP/1.2\r\n\r\n"), "as HTTP/1.1, it needs a Host");
    }

    /** RFC 9112 section 3.2 with RFC 3986 section 3.2.2: every form of uri-host, a port, or nothing. */
    @Test
    void validHostsAreServed() {
        for (String host : new String[] {"", "a", "127.0.0.1:8080", "[::1]", "[::1]:8080", "[2001:db8::7]", "xn--bcher-kva.example",
                "a%41b", "a-b.c_d~e", "host:", "sub.example.com:443"}) {
            assertEquals("/", parse("GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n").request.path(), "Host: " + host);
        }
    }

    @Test
    void unsupportedTransferCodingIs501() {
        assertEquals(501, errorStatus("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"));
    }

    @Test
    void limitsAnswer414And431And413() {
        assertEquals(414, errorStatus("GET /" + "a".repeat(RequestParser.MAX_REQUEST_LINE) + " HTTP/1.1\r\n"));
        assertEquals(431, errorStatus("GET / HTTP/1.1\r\nHost: a\r\nX: " + "b".repeat(RequestParser.MAX_HEADER_BYTES) + "\r\n\r\n"));
        StringBuilder many = new StringBuilder("GET / HTTP/1.1\r\nHost: a\r\n");
        for (int i = 0; i < RequestParser.MAX_HEADERS + 1; i++) many.append("X").append(i).append(": 1\r\n");
        assertEquals(431, errorStatus(many.append("\r\n").toString()));
        assertEquals(413, errorStatus("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: " + (RequestParser.MAX_BODY + 1) + "\r\n\r\n"));
    }

    @Test
    void trailersAreHeldToTheHeaderLimits() {
        String lastChunk = CHUNKED + "0\r\n";
        StringBuilder fields = new StringBuilder();
        for (int i = 0; i < RequestParser.MAX_HEADERS; i++) fields.append("T").append(i).append(": 1\r\n");
        assertEquals(lastChunk.length() + fields.length() + 2, parse(lastChunk + fields + "\r\n").length);
        assertEquals(431, errorStatus(lastChunk + fields + "T: 1\r\n\r\n"));
        assertEquals(431, errorStatus(lastChunk + "T: " + "v".repeat(RequestParser.MAX_HEADER_BYTES) + "\r\n\r\n"));
        // a trailer section exactly at the byte limit waits for its empty line, as the header section does
        String exact = lastChunk + "T: " + "v".repeat(RequestParser.MAX_HEADER_BYTES - "T: \r\n".length()) + "\r\n";
        assertNull(parse(exact));
        assertNull(parse(exact + "\r"));
        assertEquals(exact.length() + 2, parse(exact + "\r\n").length);
    }

    @Test
    void garbageIsRejectedBeforeTheLineEnds() {
        // a scanner that never sends CRLF must not make the server buffer forever
        assertEquals(400, errorStatus("\u0016\u0003\u0001\u0002\u0000"));
    }
}

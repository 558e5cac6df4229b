package kiln.conformance;

import static kiln.conformance.RawConnection.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;

import kiln.demo.Endpoints;
import kiln.http.Http;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Connection handling on the wire (raw sockets): persistence (RFC 9112 section 9.3), pipelining
 * (section 9.3.2), methods (RFC 9110 section 15.5.6), and malformed requests (RFC 9112 sections 3
 * and 5: 400, then close, since the rest of the stream can no longer be framed).
 */
class ConnectionsTest {
    @RegisterExtension
    static final Servers SERVERS = new Servers("ConnectionsTest");

    static java.util.List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void http11KeepsTheConnectionOpenByDefault(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse first = c.exchange(get("/plaintext"));
            assertEquals("HTTP/1.1 200 OK", first.statusLine);
            assertNull(first.header("Connection"), () -> "no Connection field on a persistent HTTP/1.1 response:\n" + first);
            RawResponse second = c.exchange(get("/json"));
            assertEquals("HTTP/1.1 200 OK", second.statusLine);
            assertEquals("{\"message\":\"Hello, World!\"}", second.bodyText());
        }
    }

    /** ApacheBench -k sends HTTP/1.0 with "Connection: Keep-Alive"; option names are case-insensitive (RFC 9110 section 7.6.1). */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void http10KeepAliveIsHonouredAndAnnounced(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            for (String option : new String[] {"Keep-Alive", "keep-alive"}) {
                RawResponse r = c.exchange("GET /plaintext HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: " + option + "\r\n\r\n");
                assertEquals("HTTP/1.1 200 OK", r.statusLine, () -> "always HTTP/1.1 (RFC 9110 section 6.2):\n" + r);
                assertEquals("keep-alive", r.header("Connection"), () -> "Connection field of\n" + r);
                assertEquals("Hello, World!", r.bodyText());
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void http10WithoutKeepAliveIsClosedAfterTheResponse(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse r = c.exchange("GET /plaintext HTTP/1.0\r\n\r\n");
            assertEquals("HTTP/1.1 200 OK", r.statusLine, () -> "always HTTP/1.1 (RFC 9110 section 6.2):\n" + r);
            assertEquals("Hello, World!", r.bodyText());
            assertEquals("close", r.header("Connection"), () -> "the server closes, so it says so (Http's contract):\n" + r);
            assertNull(c.closedByServer());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void http11ConnectionCloseIsHonoured(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse r = c.exchange("GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
            assertEquals("HTTP/1.1 200 OK", r.statusLine);
            assertEquals("close", r.header("Connection"), () -> r.toString());
            assertNull(c.closedByServer());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void pipelinedRequestsAreAnsweredInOrder(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send(get("/plaintext") + get("/json") + get("/hello"));
            assertEquals("Hello, World!", c.read().bodyText());
            assertEquals("{\"message\":\"Hello, World!\"}", c.read().bodyText());
            assertEquals("HelloWorld", c.read().bodyText());
            assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "the connection is still usable");
        }
    }

    /** A slow first request must not let the quick ones behind it answer first (RFC 9112 section 9.3.2). */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void pipelinedSlowRequestIsNotOvertaken(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send(get("/hello?delay=200") + get("/plaintext") + get("/db"));
            assertEquals("HelloWorld", c.read().bodyText());
            assertEquals("Hello, World!", c.read().bodyText());
            assertTrue(c.read().bodyText().startsWith("{\"id\":"), "third answer is /db's");
        }
    }

    /** TCP is a byte stream: a request may arrive in pieces, even mid-line. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void requestSplitAcrossWritesIsAnswered(FrontEnd fe) throws InterruptedException {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            String request = get("/plaintext");
            for (String piece : new String[] {request.substring(0, 7), request.substring(7, 25), request.substring(25)}) {
                c.send(piece);
                Thread.sleep(50);
            }
            RawResponse r = c.read();
            assertEquals("HTTP/1.1 200 OK", r.statusLine);
            assertEquals("Hello, World!", r.bodyText());
        }
    }

    /**
     * A request completed one byte per write, after a whole one in the same first write: the server
     * keeps the unfinished second request across many reads (and may move it within its buffer)
     * and must answer both, in order, on a connection that stays usable.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void pipelinedRequestTrickledByteByByteIsAnswered(FrontEnd fe) throws InterruptedException {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            String second = "GET /json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trickle: " + "t".repeat(40) + "\r\n\r\n";
            c.send(get("/plaintext") + second.substring(0, 10));
            for (int i = 10; i < second.length(); i++) {
                c.send(second.substring(i, i + 1));
                Thread.sleep(2);
            }
            assertEquals("Hello, World!", c.read().bodyText());
            assertEquals("{\"message\":\"Hello, World!\"}", c.read().bodyText());
            assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "the connection is still usable");
        }
    }

    static Stream<Arguments> otherMethods() {
        return FrontEnd.cross(new Object[][] {{"POST"}, {"PUT"}, {"DELETE"}, {"PATCH"}});
    }

    @ParameterizedTest(name = "{0} {1} /plaintext -> 405")
    @MethodSource("otherMethods")
    void otherMethodsAre405WithAllow(FrontEnd fe, String method) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse r = c.exchange(method + " /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
            assertEquals("HTTP/1.1 405 Method Not Allowed", r.statusLine, () -> r.toString());
            assertEquals("GET, HEAD, OPTIONS", r.header("Allow"), () -> r.toString());
            assertEquals(Http.TEXT_PLAIN, r.header("Content-Type"));
            assertTrue(r.bodyText().startsWith("405 Method Not Allowed"), () -> r.bodyText());
            assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "a 405 keeps the connection usable");
        }
    }

    /**
     * A client that sends {@code Expect: 100-continue} waits for an answer before its content
     * (RFC 9110 section 10.1.1; curl does for bodies over 1 MB, aiohttp when asked): every front end
     * reads a request's content before its handler runs, so it answers {@code 100 Continue} at once,
     * then the final status once the content is in. Before, the Kilim server made such a client wait
     * for the 10 s header timeout and a 408.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void expect100ContinueIsAnsweredAtOnce(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send("POST /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
            RawResponse first = c.readHeadOnly();
            assertEquals("HTTP/1.1 100 Continue", first.statusLine, () -> "before the content: " + first);
            c.send("x=1&y");
            RawResponse r = c.read();
            assertEquals("HTTP/1.1 405 Method Not Allowed", r.statusLine, () -> r.toString());
            assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "the connection is still usable");
        }
    }

    /**
     * An HTTP/1.0 client knows no interim responses: a server MUST ignore its {@code Expect:
     * 100-continue} (RFC 9110 section 10.1.1), send no {@code 100 Continue}, and answer once the
     * content is in. Jetty 12 sent it.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void expect100ContinueOfAnHttp10RequestIsIgnored(FrontEnd fe) throws IOException {
        try (Socket s = RobustnessTest.connect(SERVERS.get(fe))) {
            s.getOutputStream().write(("POST /plaintext HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
            s.setSoTimeout(1_000);
            byte[] early = new byte[64];
            try {
                int n = s.getInputStream().read(early);
                String got = n < 0 ? "the close" : new String(early, 0, n, StandardCharsets.ISO_8859_1);
                throw new AssertionError(fe.id + " answered an HTTP/1.0 head that expects 100-continue before its content with " + got);
            } catch (java.net.SocketTimeoutException expected) {
                // nothing: the server waits for the content
            }
            s.setSoTimeout(RawConnection.READ_TIMEOUT_MS);
            s.getOutputStream().write("x=1&y".getBytes(StandardCharsets.US_ASCII));
            String answer = new String(s.getInputStream().readNBytes(40), StandardCharsets.ISO_8859_1);
            assertTrue(answer.startsWith("HTTP/1.1 405 Method Not Allowed"), () -> fe.id + ": " + answer);
        }
    }

    /** HEAD of every GET endpoint of the registry, its example target; the event streams' HEAD is ServerSentEventsTest's. */
    static Stream<Arguments> getEndpoints() {
        return FrontEnd.cross(Endpoints.ALL.stream().filter(e -> e.method.equals("GET") && !e.path.endsWith("/events"))
            .map(e -> new Object[] {e.example}).toArray(Object[][]::new));
    }

    /**
     * HEAD is answered like GET without the content (RFC 9110 sections 9.1, 9.3.2: a general-purpose
     * server must support it): the same status and Content-Type, a Content-Length, and nothing after
     * the head. The client ends a HEAD response at the empty line whatever Content-Length says (RFC
     * 9112 section 6.3), so content sent anyway would be read as the start of the next response.
     */
    @ParameterizedTest(name = "{0} HEAD {1}")
    @MethodSource("getEndpoints")
    void headIsTheGetHeadWithoutContent(FrontEnd fe, String target) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            RawResponse got = c.exchange(get(target));
            c.send("HEAD " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + get("/plaintext"));
            RawResponse r = c.readHeadOnly();
            assertEquals(got.statusLine, r.statusLine, () -> r.toString());
            assertEquals(got.header("Content-Type"), r.header("Content-Type"), () -> r.toString());
            // random rows, and /metrics counts the GET just made: their lengths may differ from the GET's
            if (!target.startsWith("/db") && !target.contains("queries") && !target.equals("/metrics")) {
                assertEquals(got.header("Content-Length"), r.header("Content-Length"), () -> "same length as GET: " + r);
            } else {
                assertTrue(Integer.parseInt(r.header("Content-Length")) > 0, () -> r.toString());
            }
            String next = c.peek("HTTP/1.1 200 OK".length());
            assertEquals("HTTP/1.1 200 OK", next, "the bytes after the HEAD response's head must be the next response, not content");
            assertEquals("Hello, World!", c.read().bodyText());
        }
    }

    /**
     * A rejected request's body is part of the stream (RFC 9112 section 6.3): the server either
     * reads past it and answers the next request, or says Connection: close and closes. It must
     * never parse the body as a request.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void bodyOfRejectedRequestIsNotTakenForARequest(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            String body = "GET /nope HTTP/1.1\r\n\r\n";
            RawResponse r = c.exchange("POST /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + body.length()
                + "\r\n\r\n" + body);
            assertEquals(405, r.status, () -> r.toString());
            if ("close".equals(r.header("Connection"))) {
                assertNull(c.closedByServer());
            } else {
                RawResponse next = c.exchange(get("/plaintext"));
                assertEquals("HTTP/1.1 200 OK", next.statusLine, () -> "the request after the POST, not its body, is answered:\n" + next);
                assertEquals("Hello, World!", next.bodyText());
            }
        }
    }

    /** Each row: what is wrong, the request, and the deviation that lets a front end answer it otherwise (or null). */
    static Stream<Arguments> malformedRequests() {
        return FrontEnd.cross(new Object[][] {
            {"not a request line", "GARBAGE\r\n\r\n", null},
            {"no HTTP version (HTTP/0.9)", "GET /plaintext\r\n\r\n", null},
            {"version not DIGIT.DIGIT", "GET /plaintext HTTP/1.x\r\nHost: 127.0.0.1\r\n\r\n", Deviation.MALFORMED_VERSION_IS_505},
            {"header line without colon", "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\n\r\n", null},
            {"whitespace before colon (RFC 9112 5.1 MUST 400)", "GET /plaintext HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n", null},
            {"HTTP/1.1 without Host (RFC 9112 3.2 MUST 400)", "GET /plaintext HTTP/1.1\r\n\r\n", null}});
    }

    /**
     * Contract: malformed request -> 400 with the contract's error head and Connection: close, then
     * the server closes; other connections are unaffected. A front end with
     * {@link Deviation#PARSE_ERRORS_BODILESS_400} gives its parser's bodiless 400 instead, one with
     * the row's version deviation {@link Deviation#MALFORMED_VERSION_IS_505} exactly 505; both close.
     */
    @ParameterizedTest(name = "{0} {1} -> 400 + close")
    @MethodSource("malformedRequests")
    void malformedRequestIs400ThenClose(FrontEnd fe, String what, String request, Deviation versionDeviation) {
        ServerProcess s = SERVERS.get(fe);
        try (RawConnection c = RawConnection.open(s)) {
            RawResponse r = c.exchange(request);
            if (fe.has(Deviation.PARSE_ERRORS_BODILESS_400)) {
                Contract.assertBodiless400(fe, r);
            } else {
                int status = versionDeviation != null && fe.has(versionDeviation) ? 505 : 400;
                assertEquals(Contract.statusLine(status), r.statusLine, () -> r.toString());
                Contract.assertHeaders(fe, r, Http.TEXT_PLAIN, "Connection: close");
                assertTrue(r.bodyText().startsWith(status + " " + Http.reason(status)), () -> r.bodyText());
            }
            assertNull(c.closedByServer());
        }
        try (RawConnection c = RawConnection.open(s)) {
            assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "a new connection is served normally");
        }
    }

    /**
     * "HTTP/9.9" is a well-formed HTTP-version (RFC 9112 section 2.3: DIGIT "." DIGIT) of a major
     * version the server does not implement: 505 (RFC 9110 section 15.6.6), not 400. The server
     * cannot know how the rest of such a stream is framed, so it closes. A front end with
     * {@link Deviation#UNKNOWN_VERSION_SERVED_AS_HTTP_1_1} must serve it exactly as HTTP/1.1 instead.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void unsupportedMajorVersionIs505ThenClose(FrontEnd fe) {
        ServerProcess s = SERVERS.get(fe);
        try (RawConnection c = RawConnection.open(s)) {
            RawResponse r = c.exchange("GET /plaintext HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n");
            if (fe.has(Deviation.UNKNOWN_VERSION_SERVED_AS_HTTP_1_1)) {
                assertEquals("HTTP/1.1 200 OK", r.statusLine, () -> r.toString());
                Contract.assertHeaders(fe, r, Http.TEXT_PLAIN);
                assertEquals("Hello, World!", r.bodyText());
                assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "served as HTTP/1.1: the connection persists");
                return;
            }
            assertEquals("HTTP/1.1 505 HTTP Version Not Supported", r.statusLine, () -> r.toString());
            Contract.assertHeaders(fe, r, Http.TEXT_PLAIN, "Connection: close");
            assertNull(c.closedByServer());
        }
        try (RawConnection c = RawConnection.open(s)) {
            assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "a new connection is served normally");
        }
    }
}

package kiln.conformance;

import static kiln.conformance.RawConnection.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.stream.Stream;

import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The same bytes, the same answer from every front end: request paths in their normal form (RFC
 * 3986 section 6.2.2, {@code kiln.http.Paths}) and the line syntax where server libraries are
 * known to differ (bare LF, obsolete line folding, the HTTP-name's case). Where a library does
 * otherwise and cannot be configured to conform, the front end's {@link Deviation} pins what it
 * does instead.
 */
class RequestSyntaxTest {
    @RegisterExtension
    static final Servers SERVERS = new Servers("RequestSyntaxTest");

    /** Each row: the target, the status every front end answers, the body of a 200. */
    static Stream<Arguments> targets() {
        return FrontEnd.cross(new Object[][] {
            // RFC 3986 sections 5.2.4, 6.2.2.3: dot-segments are removed
            {"/./plaintext", 200},
            {"/a/../plaintext", 200},
            // RFC 9110 section 4.2.3, RFC 3986 section 6.2.2.2: %70 is "p" (unreserved), also %2e is "."
            {"/%70laintext", 200},
            {"/%2e/plaintext", 200},
            // an empty segment is part of the path (RFC 3986 section 3.3): another path
            {"//plaintext", 404},
            // a path parameter is part of the segment: another path (Undertow would drop it)
            {"/plaintext;x", 404},
            // ".." above the root: kiln's choice, as Jetty's and nginx's (RFC 3986 would drop it)
            {"/../plaintext", 400},
            // not a URI (RFC 3986 section 2.1)
            {"/%zz", 400}});
    }

    /**
     * A target's normal form is routed: 200 with /plaintext's body, 404, or 400 (after which the
     * server may close: the libraries' parsers refuse some of these themselves).
     */
    @ParameterizedTest(name = "{0} GET {1} -> {2}")
    @MethodSource("targets")
    void pathIsRoutedInItsNormalForm(FrontEnd fe, String target, int status) {
        ServerProcess s = SERVERS.get(fe);
        try (RawConnection c = RawConnection.open(s)) {
            RawResponse r = c.exchange(get(target));
            assertEquals(status, r.status, () -> fe.id + " answered GET " + target + " with\n" + r);
            if (status == 200) {
                assertEquals("Hello, World!", r.bodyText());
                assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "the connection is still usable");
            }
        }
        try (RawConnection c = RawConnection.open(s)) {
            assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "a new connection is served normally");
        }
    }

    /**
     * RFC 9112 section 2.2: lines end in CRLF; a recipient MAY take a bare LF. The contract refuses
     * it (400, close), so that a front end never reads a request otherwise than a proxy before it.
     * Two pipelined requests show whether the server took the first one's end where it should not.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void bareLfLineEndsAre400(FrontEnd fe) {
        String twoRequests = "GET /plaintext HTTP/1.1\nHost: 127.0.0.1\n\nGET /json HTTP/1.1\nHost: 127.0.0.1\n\n";
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send(twoRequests);
            if (fe.has(Deviation.BARE_LF_ACCEPTED)) {
                assertEquals("Hello, World!", c.read().bodyText());
                assertEquals("{\"message\":\"Hello, World!\"}", c.read().bodyText());
                assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "the connection stays open");
                return;
            }
            assertRefusedThenClosed(fe, c);
        }
    }

    /** RFC 9112 section 5.2: obs-fold is 400 or unfolded; the contract says 400. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void obsoleteLineFoldingIs400(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send("GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\r\n b\r\n\r\n");
            if (fe.has(Deviation.OBS_FOLD_UNFOLDED)) {
                assertServedThenUsable(c);
                return;
            }
            assertRefusedThenClosed(fe, c);
        }
    }

    /** RFC 9112 section 2.3: HTTP-name is case-sensitive, so {@code http/1.1} is no HTTP-version: 400. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void lowercaseHttpNameIs400(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send("GET /plaintext http/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            if (fe.has(Deviation.VERSION_NAME_CASE_INSENSITIVE)) {
                assertServedThenUsable(c);
                return;
            }
            assertRefusedThenClosed(fe, c);
        }
    }

    /** RFC 9110 section 2.5: a later minor version of HTTP/1 ({@code HTTP/1.2}) is served as HTTP/1.1. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aLaterMinorVersionIsServedAsHttp11(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send("GET /plaintext HTTP/1.2\r\nHost: 127.0.0.1\r\n\r\n");
            if (fe.has(Deviation.LATER_MINOR_VERSION_IS_505)) {
                RawResponse r = c.read();
                assertEquals(Contract.statusLine(505), r.statusLine, () -> fe.id + " answered\n" + r);
                Contract.assertHeaders(fe, r, kiln.http.Http.TEXT_PLAIN, "Connection: close");
                assertNull(c.closedByServer(), "the connection must be closed after the 505");
                return;
            }
            assertServedThenUsable(c);
        }
    }

    /**
     * RFC 9112 section 6.3: a request whose Transfer-Encoding does not end in {@code chunked} has no
     * knowable length: 400, then close (501 would say the coding is merely unsupported, and leave
     * the body's bytes to be read as the next request).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void transferCodingsNotEndingInChunkedAre400(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send("POST /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n");
            assertContract400ThenClosed(fe, c);  // Undertow's parser takes it: kiln's check answers, in the contract's form
        }
    }

    /** RFC 9112 section 3.2: a Host that is no {@code uri-host [":" port]} is 400. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void anInvalidHostIs400(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send("GET /plaintext HTTP/1.1\r\nHost: a/b\r\n\r\n");
            assertRefusedThenClosed(fe, c);
        }
    }

    /**
     * RFC 9110 section 9.3.2: the answer to a HEAD has no content, a refusal too: 413 for a
     * Content-Length over the limit, its head only, then close.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aRefusedHeadHasNoBody(FrontEnd fe) {
        try (RawConnection c = RawConnection.open(SERVERS.get(fe))) {
            c.send("HEAD /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n");
            RawResponse r = c.readHeadOnly();
            assertEquals(413, r.status, () -> fe.id + " answered\n" + r);
            assertEquals("", c.readToClose(), "no content after a HEAD's head, then close");
        }
    }

    static java.util.List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    private static void assertServedThenUsable(RawConnection c) {
        RawResponse r = c.read();
        assertEquals("HTTP/1.1 200 OK", r.statusLine, () -> r.toString());
        assertEquals("Hello, World!", r.bodyText());
        assertEquals("Hello, World!", c.exchange(get("/plaintext")).bodyText(), "the connection stays usable");
    }

    /** 400 (the library's bodiless one under {@link Deviation#PARSE_ERRORS_BODILESS_400}), then the server closes. */
    private static void assertRefusedThenClosed(FrontEnd fe, RawConnection c) {
        if (!fe.has(Deviation.PARSE_ERRORS_BODILESS_400)) {
            assertContract400ThenClosed(fe, c);
            return;
        }
        Contract.assertBodiless400(fe, c.read());
        assertNull(c.closedByServer(), "the connection must be closed after the 400");
    }

    /** The contract's 400, then the server closes. */
    private static void assertContract400ThenClosed(FrontEnd fe, RawConnection c) {
        RawResponse r = c.read();
        assertEquals(Contract.statusLine(400), r.statusLine, () -> fe.id + " answered\n" + r);
        Contract.assertHeaders(fe, r, kiln.http.Http.TEXT_PLAIN, "Connection: close");
        assertNull(c.closedByServer(), "the connection must be closed after the 400");
    }
}

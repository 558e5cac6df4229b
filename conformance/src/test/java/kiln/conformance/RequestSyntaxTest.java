package kiln.conformance;

import static kiln.conformance.RawConnection.get;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.stream.Stream;

import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The same bytes, the same answer from every front end: request paths in their normal form (RFC
 * 3986 section 6.2.2, {@code kiln.app.Paths}).
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
}

package kiln.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The normal form every front end routes on: RFC 3986 sections 6.2.2 and 5.2.4. */
class PathsTest {
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "/./plaintext, /plaintext",
        "/a/../plaintext, /plaintext",
        "/a/b/../../plaintext, /plaintext",
        "/%70laintext, /plaintext",
        "/%2e/plaintext, /plaintext",
        "/%2E%2E/x/../y, ",
        "/a/%7e%5F-.x, /a/~_-.x",
        "/a%2fb, /a%2Fb",
        "/a%20b, /a%20b",
        "//plaintext, //plaintext",
        "/a//../b, /a/b",
        "/a/., /a/",
        "/a/.., /",
        "/., /",
        "/.well-known/x, /.well-known/x",
        "/a/..b, /a/..b"})
    void normalFormFollowsRfc3986(String path, String normal) {
        if (normal == null) {
            assertEquals(400, assertThrows(HttpException.class, () -> Paths.normalize(path)).status(), path);
        } else {
            assertEquals(normal, Paths.normalize(path), path);
        }
    }

    @Test
    void aPathAlreadyNormalIsReturnedAsItIs() {
        String path = "/queries";
        assertSame(path, Paths.normalize(path));
        assertSame("*", Paths.normalize("*"));
    }

    @Test
    void malformedPercentEncodingAndClimbingAboveTheRootAre400() {
        for (String path : new String[] {"/%zz", "/%7", "/a%", "/%g0", "/..", "/../plaintext", "/a/../../b"}) {
            assertEquals(400, assertThrows(HttpException.class, () -> Paths.normalize(path)).status(), path);
        }
    }
}

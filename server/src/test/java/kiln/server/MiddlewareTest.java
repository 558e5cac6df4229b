package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import kiln.http.HttpException;
import kiln.http.Response;
import kiln.http.Request;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Middleware in the one pipeline: filters see every request (handlers, 404/405, OPTIONS, thrown errors) in nesting order. */
class MiddlewareTest {
    private static final String TOKEN = "0123456789abcdef-token";

    private static StepRouter router() {
        return new StepRouter(Metrics.off())
            .steps("GET", "/hello", request -> Step.of(Response.text("hi " + request.attribute(Authentication.USER))))
            .steps("POST", "/hello", request -> Step.of(Response.text("posted")))
            .steps("GET", "/boom", request -> { throw new HttpException(409, "taken"); })
            .steps("GET", "/admin/users", request -> Step.of(Response.text("users")));
    }

    /** Runs a request through the router as a front end does: begin, the handler's steps, answer. */
    private static Response serve(StepRouter router, String method, String target, String... headers) {
        int q = target.indexOf('?');
        Request request = Request.of(method, q < 0 ? target : target.substring(0, q), q < 0 ? null : target.substring(q + 1),
            List.of(headers), new byte[0]).remoteAddress(new InetSocketAddress("127.0.0.1", 40000));
        AbstractRouter.Exchange<StepHandler> x = router.begin(request);
        return x.respond(Step.runBlocking(StepRouter.firstStep(x)));
    }

    /** A filter that records what it saw, to pin the order. */
    private static Filter recording(String name, List<String> seen) {
        return new Filter() {
            @Override
            public Response before(Request request, Response answer) {
                seen.add(name + ".before");
                return null;
            }

            @Override
            public Response after(Request request, Response response) {
                seen.add(name + ".after " + response.status);
                return response;
            }
        };
    }

    @Test
    void filtersNestInRegistrationOrderAndSeeRouterAnswersAndErrors() {
        List<String> seen = new ArrayList<>();
        StepRouter router = router().filter(recording("a", seen)).filter(recording("b", seen));
        serve(router, "GET", "/hello");
        assertEquals(List.of("a.before", "b.before", "b.after 200", "a.after 200"), seen);
        for (String[] c : new String[][] {{"GET", "/nothing", "404"}, {"DELETE", "/hello", "405"}, {"OPTIONS", "/hello", "200"},
            {"GET", "/boom", "409"}}) {
            seen.clear();
            assertEquals(Integer.parseInt(c[2]), serve(router, c[0], c[1]).status, c[1]);
            assertEquals(List.of("a.before", "b.before", "b.after " + c[2], "a.after " + c[2]), seen, c[0] + " " + c[1]);
        }
    }

    @Test
    void aFilterThatAnswersStopsTheWayInButTheOuterAftersSeeIt() {
        List<String> seen = new ArrayList<>();
        StepRouter router = router().filter(recording("outer", seen)).filter(new Filter() {
            @Override
            public Response before(Request request, Response answer) {
                return Response.error(418, "no");
            }
        }).filter(recording("inner", seen));
        assertEquals(418, serve(router, "GET", "/hello").status);
        assertEquals(List.of("outer.before", "outer.after 418"), seen);
    }

    @Test
    void optionsPutsTheirFiltersOutsideTheApps() {
        List<String> seen = new ArrayList<>();
        StepRouter router = router().filter(recording("app", seen));
        ServerOptions.of("--cors", "https://a.example").applyTo(router, ServerLimits.defaults());
        Response preflight = serve(router, "OPTIONS", "/hello", "Origin", "https://a.example", "Access-Control-Request-Method", "POST");
        assertEquals(204, preflight.status);
        assertTrue(seen.isEmpty(), "the preflight was answered outside the app's filter: " + seen);
    }

    @Test
    void corsPreflightOnAnyPathAndHeadersOnEveryAnswerToAnAllowedOrigin() {
        StepRouter router = router().filter(Cors.allow("https://a.example"));
        Response known = serve(router, "OPTIONS", "/hello", "Origin", "https://a.example", "Access-Control-Request-Method", "POST",
            "Access-Control-Request-Headers", "content-type, x-token");
        assertEquals(204, known.status);
        assertEquals("https://a.example", known.header("Access-Control-Allow-Origin"));
        assertEquals("GET, HEAD, POST, OPTIONS", known.header("Access-Control-Allow-Methods"), "the path's Allow");
        assertEquals("content-type, x-token", known.header("Access-Control-Allow-Headers"));
        assertEquals("600", known.header("Access-Control-Max-Age"));
        assertTrue(known.header("Vary").contains("Origin"));

        Response unknown = serve(router, "OPTIONS", "/no/such/path", "Origin", "https://a.example", "Access-Control-Request-Method", "GET");
        assertEquals(204, unknown.status, "a preflight on any path");
        assertEquals(Cors.DEFAULT_METHODS, unknown.header("Access-Control-Allow-Methods"));

        Response foreign = serve(router, "OPTIONS", "/hello", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST");
        assertEquals(403, foreign.status);
        assertNull(foreign.header("Access-Control-Allow-Origin"));

        Response error = serve(router, "GET", "/nothing", "Origin", "https://a.example");
        assertEquals(404, error.status);
        assertEquals("https://a.example", error.header("Access-Control-Allow-Origin"), "a page can read the 404");
        assertEquals("Origin", error.header("Vary"));
        Response plain = serve(router, "GET", "/hello", "Origin", "https://evil.example");
        assertEquals(200, plain.status, "CORS is the browser's to enforce; the answer only lacks the header");
        assertNull(plain.header("Access-Control-Allow-Origin"));
        assertEquals("Origin", plain.header("Vary"));
        assertNull(serve(router, "GET", "/hello").header("Vary"), "not cross-origin: untouched");
        assertEquals(200, serve(router, "OPTIONS", "/hello", "Origin", "https://a.example").status,
            "an OPTIONS without Access-Control-Request-Method is no preflight: the router's Allow answer");

        Response any = serve(router().filter(Cors.allow("*")), "GET", "/hello", "Origin", "https://whoever.example");
        assertEquals("*", any.header("Access-Control-Allow-Origin"));
        assertThrows(IllegalArgumentException.class, () -> Cors.allow("*").withCredentials());
        assertThrows(IllegalArgumentException.class, () -> Cors.allow("https://a.example/path"));
        Response credentialed = serve(router().filter(Cors.allow("https://a.example").withCredentials()), "GET", "/hello",
            "Origin", "https://a.example");
        assertEquals("true", credentialed.header("Access-Control-Allow-Credentials"));
    }

    @Test
    void authenticationRefusesWith401AndAChallengeOnlyOnItsPaths() {
        StepRouter router = router().filter(Authentication.bearerTokens("kiln", List.of(TOKEN)).on("/admin"));
        assertEquals(200, serve(router, "GET", "/hello").status, "not a protected path");
        Response none = serve(router, "GET", "/admin/users");
        assertEquals(401, none.status);
        assertEquals("Bearer realm=\"kiln\"", none.header("WWW-Authenticate"));
        Response wrong = serve(router, "GET", "/admin/users", "Authorization", "Bearer not-the-token-at-all");
        assertEquals(401, wrong.status);
        assertEquals("Bearer realm=\"kiln\", error=\"invalid_token\"", wrong.header("WWW-Authenticate"));
        assertEquals(401, serve(router, "GET", "/admin/nothing").status, "an unknown path under a prefix tells nothing");
        assertEquals(200, serve(router, "GET", "/admin/users", "Authorization", "bearer " + TOKEN).status, "the scheme ignores case");
        assertEquals(404, serve(router, "GET", "/administrator").status, "prefixes match whole segments");

        StepRouter basic = router().filter(Authentication.basic("admin", (u, p) -> u.equals("ann") && p.equals("s3cret:x")));
        String good = Base64.getEncoder().encodeToString("ann:s3cret:x".getBytes(StandardCharsets.UTF_8));
        Response in = serve(basic, "GET", "/hello", "Authorization", "Basic " + good);
        assertEquals("hi ann", new String(in.body, StandardCharsets.UTF_8), "the handler reads the user");
        Response out = serve(basic, "GET", "/hello", "Authorization", "Basic !!!");
        assertEquals(401, out.status);
        assertEquals("Basic realm=\"admin\", charset=\"UTF-8\"", out.header("WWW-Authenticate"));
        assertThrows(IllegalArgumentException.class, () -> Authentication.bearerTokens("kiln", List.of("short")));
    }

    /** A request's path is compared in its normal form, so a prefix that is not normal would protect nothing: refused at start. */
    @Test
    void aProtectedPathMustBeInNormalForm(@TempDir Path dir) throws Exception {
        Authentication bearer = Authentication.bearerTokens("kiln", List.of(TOKEN));
        IllegalArgumentException encoded = assertThrows(IllegalArgumentException.class, () -> bearer.on("/metrics", "/wor%6Cds"));
        assertEquals("a protected path must be in normal form: '/wor%6Cds' is '/worlds' (RFC 3986 section 6.2.2)", encoded.getMessage());
        assertEquals("a protected path must be in normal form: '/admin/./users' is '/admin/users' (RFC 3986 section 6.2.2)",
            assertThrows(IllegalArgumentException.class, () -> bearer.on("/admin/./users")).getMessage());
        assertEquals("a protected path must be in normal form: '/a%2fb' is '/a%2Fb' (RFC 3986 section 6.2.2)",
            assertThrows(IllegalArgumentException.class, () -> bearer.on("/a%2fb")).getMessage());
        assertEquals("a protected path must be in normal form: '/../admin' has none (the path climbs above the root with '..')",
            assertThrows(IllegalArgumentException.class, () -> bearer.on("/../admin")).getMessage());
        assertEquals("a protected path must be in normal form: '/a%zz' has none "
            + "(malformed percent-encoding in the path (RFC 3986 section 2.1))",
            assertThrows(IllegalArgumentException.class, () -> bearer.on("/a%zz")).getMessage());
        assertEquals(401, serve(router().filter(bearer.on("/admin/", "/a%2Fb")), "GET", "/admin/users").status, "normal prefixes are taken");

        Path tokens = Files.writeString(dir.resolve("tokens"), TOKEN + "\n");
        IllegalArgumentException option = assertThrows(IllegalArgumentException.class,
            () -> ServerOptions.of("--auth-tokens", tokens.toString(), "--auth-paths", "/metrics,/wor%6Cds").applyTo(router(), ServerLimits.defaults()));
        assertEquals("--auth-paths: a protected path must be in normal form: '/wor%6Cds' is '/worlds' (RFC 3986 section 6.2.2)",
            option.getMessage());
    }

    /** Issue 36: with --auth-paths /worlds/5, /worlds/05 and /worlds/%2B5 answered row 5, as the handler parsed leniently. */
    @Test
    void aRuleOnAPathProtectsWhatItsHandlerServes() {
        StepRouter router = new StepRouter(Metrics.off())
            .steps("GET", "/worlds/{id}", request -> Step.of(Response.text("row " + request.pathParamLong("id"))))
            .filter(Authentication.bearerTokens("kiln", List.of(TOKEN)).on("/worlds/5"));
        assertEquals(401, serve(router, "GET", "/worlds/5").status);
        assertEquals("row 5", new String(serve(router, "GET", "/worlds/5", "Authorization", "Bearer " + TOKEN).body, StandardCharsets.UTF_8));
        for (String other : new String[] {"/worlds/05", "/worlds/+5", "/worlds/%2B5", "/worlds/%D9%A5"}) {
            assertEquals(404, serve(router, "GET", other).status, other + " is not row 5");
        }
        assertEquals("row 6", new String(serve(router, "GET", "/worlds/6").body, StandardCharsets.UTF_8), "only /worlds/5 is protected");
    }

    @Test
    void requestIdIsTakenWhenPlausibleElseMadeAndEchoed() {
        StepRouter router = router().filter(new RequestId());
        assertEquals("abc-123", serve(router, "GET", "/hello", "X-Request-Id", "abc-123").header("X-Request-Id"));
        String made = serve(router, "GET", "/nothing", "X-Request-Id", "bad id\" forged").header("X-Request-Id");
        assertTrue(made.matches("[0-9a-f]{8}-[0-9a-f]+"), made);
        assertNotEquals(made, serve(router, "GET", "/hello").header("X-Request-Id"));
    }

    @Test
    void accessLogWritesOneCombinedLinePerRequestIncludingErrorsAndRefusals(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("access.log");
        try (AccessLog log = AccessLog.toFile(file)) {
            StepRouter router = router().filter(new RequestId()).filter(log)
                .filter(Authentication.bearerTokens("kiln", List.of(TOKEN)).on("/admin"));
            serve(router, "GET", "/hello?x=1", "User-Agent", "curl/8 \"quoted\"", "Referer", "http://r.example/", "X-Request-Id", "r1");
            serve(router, "GET", "/nothing", "X-Request-Id", "r2");
            serve(router, "GET", "/admin/users", "Authorization", "Bearer " + TOKEN, "X-Request-Id", "r3");
            serve(router, "GET", "/admin/users", "X-Request-Id", "r4");
            serve(router, "HEAD", "/hello", "X-Request-Id", "r5");
            router.refused(new InetSocketAddress("10.0.0.9", 5555), Response.error(400, "bad request line"));
        }
        List<String> lines = Files.readAllLines(file);
        assertEquals(6, lines.size(), String.join("\n", lines));
        String date = "\\[\\d{2}/\\w{3}/\\d{4}:\\d{2}:\\d{2}:\\d{2} \\+0000\\]";
        assertTrue(lines.get(0).matches("127\\.0\\.0\\.1 - - " + date
            + " \"GET /hello\\?x=1 HTTP/1\\.1\" 200 7 \"http://r\\.example/\" \"curl/8 \\\\\"quoted\\\\\"\" \"r1\""), lines.get(0));
        assertTrue(lines.get(1).matches(".* \"GET /nothing HTTP/1\\.1\" 404 \\d+ \"-\" \"-\" \"r2\""), lines.get(1));
        assertTrue(lines.get(2).matches("127\\.0\\.0\\.1 - token-1 .* 200 .*\"r3\""), lines.get(2));
        assertTrue(lines.get(3).matches(".* 401 .*\"r4\""), lines.get(3));
        assertTrue(lines.get(4).matches(".*\"HEAD /hello HTTP/1\\.1\" 200 - .*"), lines.get(4));
        assertTrue(lines.get(5).matches("10\\.0\\.0\\.9 - - " + date + " \"-\" 400 \\d+ \"-\" \"-\""), lines.get(5));
    }

    @Test
    void errorsTakeTheFormTheAcceptPrefersBeforeTheFiltersSeeThem() {
        List<String> seen = new ArrayList<>();
        StepRouter router = router().filter(new Filter() {
            @Override
            public Response after(Request request, Response response) {
                seen.add(response.contentType);
                return response;
            }
        });
        Response json = serve(router, "GET", "/nope", "Accept", "application/json");
        assertEquals("application/problem+json", json.contentType);
        assertEquals("{\"type\":\"about:blank\",\"title\":\"Not Found\",\"status\":404,\"detail\":\"no such path: /nope\"}",
            new String(json.body, StandardCharsets.UTF_8));
        assertEquals("404 Not Found: no such path: /nope\n", new String(serve(router, "GET", "/nope", "Accept", "*/*").body,
            StandardCharsets.UTF_8));
        assertEquals(List.of("application/problem+json", "text/plain; charset=UTF-8"), seen, "the filters saw the forms sent");
    }

    @Test
    void accessLogEscapesWhatCouldForgeALine() {
        assertEquals("a\\\"b\\\\c\\x0a\\x1b", AccessLog.escape("a\"b\\c\n\u001b"));
    }

    /**
     * Bytes 0x80-0x9F of a header reached the log as C1 controls (U+0085 is a line break to many
     * readers: a forged line): every byte outside printable ASCII is {@code \xhh}, as nginx writes it.
     */
    @Test
    void accessLogEscapesEveryByteOutsidePrintableAscii() {
        assertEquals("curl\\x85forged \\x7f\\x80\\x9f\\xa0\\xe9\\xff", AccessLog.escape("curl\u0085forged \u007f\u0080\u009f\u00a0\u00e9\u00ff"),
            "a header's bytes, decoded one char per byte (ISO-8859-1): each one \\xhh");
        assertEquals("\\xc4\\x80\\xe2\\x80\\xa8\\xe2\\x82\\xac\\xf0\\x9f\\x98\\x80", AccessLog.escape("\u0100\u2028\u20ac\ud83d\ude00"),
            "a char above 0xFF (a Basic user name, UTF-8): its UTF-8 bytes");
        String printable = " !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~";
        assertEquals(printable, AccessLog.escape(printable), "printable ASCII as it is");
        assertEquals("GET /x\\xc3\\xa9 HTTP/1.1", AccessLog.escape("GET /x\u00c3\u00a9 HTTP/1.1"), "the bytes as the client sent them");
    }

    @Test
    void badOptionsNameTheOption(@TempDir Path dir) throws Exception {
        IllegalArgumentException cors = assertThrows(IllegalArgumentException.class,
            () -> ServerOptions.of("--cors", "a.example").applyTo(router(), ServerLimits.defaults()));
        assertTrue(cors.getMessage().startsWith("--cors: "), cors.getMessage());
        Path tokens = Files.writeString(dir.resolve("tokens"), "# ops\nshort\n");
        IllegalArgumentException auth = assertThrows(IllegalArgumentException.class,
            () -> ServerOptions.of("--auth-tokens", tokens.toString()).applyTo(router(), ServerLimits.defaults()));
        assertTrue(auth.getMessage().startsWith("--auth-tokens "), auth.getMessage());
        IllegalArgumentException log = assertThrows(IllegalArgumentException.class,
            () -> ServerOptions.of("--access-log", dir.resolve("no/such/dir/log").toString()).applyTo(router(), ServerLimits.defaults()));
        assertTrue(log.getMessage().startsWith("--access-log "), log.getMessage());
    }
}

package kiln.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

import kiln.http.HttpException;
import kiln.http.PathTemplate;
import kiln.http.QueryParams;
import kiln.http.Request;

class ParamsTest {

    @Test
    void queriesFollowTheTechEmpowerClampRule() {
        assertEquals(2, Params.queries(QueryParams.get("queries=2", "queries")));
        assertEquals(1, Params.queries(QueryParams.get("queries=0", "queries")));
        assertEquals(1, Params.queries(QueryParams.get("queries=foo", "queries")));
        assertEquals(500, Params.queries(QueryParams.get("queries=501", "queries")));
        assertEquals(1, Params.queries(QueryParams.get("queries=", "queries")));
        assertEquals(1, Params.queries(QueryParams.get(null, "queries")));
        assertEquals(1, Params.queries(QueryParams.get("other=7", "queries")));
        assertEquals(1, Params.queries(QueryParams.get("queries=-3", "queries")));
        assertEquals(500, Params.queries(QueryParams.get("queries=99999999999999", "queries")));
    }

    @Test
    void badInputIsA400WithAClientSafeMessage() {
        assertThrows(HttpException.class, () -> Params.delayMs(QueryParams.get("delay=abc", "delay")));
        assertThrows(HttpException.class, () -> Params.delayMs(QueryParams.get("delay=-1", "delay")));
        assertThrows(HttpException.class, () -> Params.delayMs(QueryParams.get("delay=" + (Params.MAX_DELAY_MS + 1), "delay")));
        assertEquals(0, Params.delayMs(QueryParams.get(null, "delay")));
        assertEquals(0, Params.delayMs(QueryParams.get("delay=", "delay")));
        assertEquals(10, Params.delayMs(QueryParams.get("delay=10", "delay")));
    }

    /** @return the id {@code /worlds/{segment}} names, as its handler reads it */
    private static int worldId(String segment) {
        Request request = Request.of("GET", "/worlds/" + segment);
        request.routed(PathTemplate.parse("/worlds/{id}"));
        return Params.worldId(request);
    }

    private static String notFound(String segment) {
        HttpException e = assertThrows(HttpException.class, () -> worldId(segment), segment);
        assertEquals(404, e.status(), segment);
        return e.getMessage();
    }

    /** One World, one path: /worlds/05, /worlds/+5 and /worlds/%2B5 would pass a rule on /worlds/5 (--auth-paths). */
    @Test
    void aWorldIdIsTheCanonicalDecimalFormOnly() {
        assertEquals(5, worldId("5"));
        assertEquals(1, worldId("1"));
        assertEquals(10000, worldId("10000"));
        assertEquals("no World with id '05'", notFound("05"));
        assertEquals("no World with id '+5'", notFound("+5"));
        assertEquals("no World with id '+5'", notFound("%2B5"));
        assertEquals("no World with id ' 5'", notFound("%205"));
        assertEquals("no World with id '\u0665'", notFound("%D9%A5"));
        assertEquals("no World with id 'abc'", notFound("abc"));
        assertEquals("no World with id '-1'", notFound("-1"));
        assertEquals("no World with id 0; ids are 1..10000", notFound("0"));
        assertEquals("no World with id 10001; ids are 1..10000", notFound("10001"));
        assertEquals("no World with id '99999999999999999999'", notFound("99999999999999999999"));
    }
}

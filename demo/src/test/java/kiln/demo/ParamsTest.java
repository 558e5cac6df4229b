package kiln.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

import kiln.http.HttpException;
import kiln.http.QueryParams;

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
}

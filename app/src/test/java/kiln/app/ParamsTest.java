package kiln.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ParamsTest {

    @Test
    void queriesFollowTheTechEmpowerClampRule() {
        assertEquals(2, Params.queries(Params.query("queries=2", "queries")));
        assertEquals(1, Params.queries(Params.query("queries=0", "queries")));
        assertEquals(1, Params.queries(Params.query("queries=foo", "queries")));
        assertEquals(500, Params.queries(Params.query("queries=501", "queries")));
        assertEquals(1, Params.queries(Params.query("queries=", "queries")));
        assertEquals(1, Params.queries(Params.query(null, "queries")));
        assertEquals(1, Params.queries(Params.query("other=7", "queries")));
        assertEquals(1, Params.queries(Params.query("queries=-3", "queries")));
        assertEquals(500, Params.queries(Params.query("queries=99999999999999", "queries")));
    }

    @Test
    void paramFindsTheFirstValueAndDecodesIt() {
        assertEquals("a b", Params.query("x=1&name=a%20b&name=c", "name"));
        assertEquals("", Params.query("flag&x=1", "flag"));
        assertNull(Params.query("xname=1", "name"));
    }

    @Test
    void badInputIsA400WithAClientSafeMessage() {
        HttpException escape = assertThrows(HttpException.class, () -> Params.query("name=%zz", "name"));
        assertTrue(escape.getMessage().startsWith("malformed query string"), escape.getMessage());
        assertEquals(400, escape.status());
        assertThrows(HttpException.class, () -> Params.delayMs(Params.query("delay=abc", "delay")));
        assertThrows(HttpException.class, () -> Params.delayMs(Params.query("delay=-1", "delay")));
        assertThrows(HttpException.class, () -> Params.delayMs(Params.query("delay=" + (Params.MAX_DELAY_MS + 1), "delay")));
        assertEquals(0, Params.delayMs(Params.query(null, "delay")));
        assertEquals(0, Params.delayMs(Params.query("delay=", "delay")));
        assertEquals(10, Params.delayMs(Params.query("delay=10", "delay")));
    }
}

package kiln.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ParamsTest {

    @Test
    void queriesFollowTheTechEmpowerClampRule() {
        assertEquals(2, Params.queriesParam("queries=2"));
        assertEquals(1, Params.queriesParam("queries=0"));
        assertEquals(1, Params.queriesParam("queries=foo"));
        assertEquals(500, Params.queriesParam("queries=501"));
        assertEquals(1, Params.queriesParam("queries="));
        assertEquals(1, Params.queriesParam(null));
        assertEquals(1, Params.queriesParam("other=7"));
        assertEquals(1, Params.queriesParam("queries=-3"));
        assertEquals(500, Params.queriesParam("queries=99999999999999"));
    }

    @Test
    void paramFindsTheFirstValueAndDecodesIt() {
        assertEquals("a b", Params.param("x=1&name=a%20b&name=c", "name"));
        assertEquals("", Params.param("flag&x=1", "flag"));
        assertNull(Params.param("xname=1", "name"));
    }

    @Test
    void badInputIsABadParameterWithAClientSafeMessage() {
        Params.BadParameter escape = assertThrows(Params.BadParameter.class, () -> Params.param("name=%zz", "name"));
        assertTrue(escape.getMessage().startsWith("malformed query string"), escape.getMessage());
        assertThrows(Params.BadParameter.class, () -> Params.delayParam("delay=abc"));
        assertThrows(Params.BadParameter.class, () -> Params.delayParam("delay=-1"));
        assertThrows(Params.BadParameter.class, () -> Params.delayParam("delay=" + (Params.MAX_DELAY_MS + 1)));
        assertEquals(0, Params.delayParam(null));
        assertEquals(0, Params.delayParam("delay="));
        assertEquals(10, Params.delayParam("delay=10"));
    }
}

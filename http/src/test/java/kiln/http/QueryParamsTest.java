package kiln.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class QueryParamsTest {

    @Test
    void paramFindsTheFirstValueAndDecodesIt() {
        assertEquals("a b", QueryParams.get("x=1&name=a%20b&name=c", "name"));
        assertEquals("", QueryParams.get("flag&x=1", "flag"));
        assertNull(QueryParams.get("xname=1", "name"));
    }

    @Test
    void aMalformedEscapeIsA400WithAClientSafeMessage() {
        HttpException escape = assertThrows(HttpException.class, () -> QueryParams.get("name=%zz", "name"));
        assertTrue(escape.getMessage().startsWith("malformed query string"), escape.getMessage());
        assertEquals(400, escape.status());
    }

    @Test
    void intValueIsTheDefaultWhenAbsentOrEmptyAndTheValueInRange() {
        assertEquals(20, QueryParams.intValue(null, "limit", 20, 1, 100));
        assertEquals(20, QueryParams.intValue("other=5", "limit", 20, 1, 100));
        assertEquals(20, QueryParams.intValue("limit", "limit", 20, 1, 100));
        assertEquals(20, QueryParams.intValue("limit=", "limit", 20, 1, 100));
        assertEquals(1, QueryParams.intValue("limit=1", "limit", 20, 1, 100));
        assertEquals(100, QueryParams.intValue("limit=%2B100", "limit", 20, 1, 100));
        assertEquals(-7, Request.of("GET", "/t?offset=-7").intParam("offset", 0));
        assertEquals(42, Request.of("GET", "/t?n=42").intParam("n", 0, 0, 50));
    }

    @Test
    void aNonIntegerIsA400NamingTheParameterAndTheValue() {
        for (String junk : new String[] {"ten", "1.5", "5x", "-", "%20", "\u0665"}) {
            HttpException e = assertThrows(HttpException.class, () -> QueryParams.intValue("limit=" + junk, "limit", 20, 1, 100), junk);
            assertEquals(400, e.status());
            assertTrue(e.getMessage().startsWith("query parameter 'limit' must be an integer, got '"), e.getMessage());
        }
        assertEquals("query parameter 'limit' must be an integer, got 'ten'",
            assertThrows(HttpException.class, () -> Request.of("GET", "/t?limit=ten").intParam("limit", 20, 1, 100)).getMessage());
    }

    @Test
    void aValueOutsideTheRangeIsA400NamingTheParameterAndTheRange() {
        assertEquals("query parameter 'limit' must be 1..100, got 500",
            assertThrows(HttpException.class, () -> QueryParams.intValue("limit=500", "limit", 20, 1, 100)).getMessage());
        assertEquals("query parameter 'limit' must be 1..100, got 0",
            assertThrows(HttpException.class, () -> QueryParams.intValue("limit=0", "limit", 20, 1, 100)).getMessage());
        assertEquals("query parameter 'delay' must be an integer >= 0, got -1",
            assertThrows(HttpException.class, () -> QueryParams.intValue("delay=-1", "delay", 0, 0, Integer.MAX_VALUE)).getMessage());
        assertEquals("query parameter 'n' must be -2147483648..2147483647, got 99999999999999999999999",
            assertThrows(HttpException.class, () -> Request.of("GET", "/t?n=99999999999999999999999").intParam("n", 0)).getMessage());
    }
}

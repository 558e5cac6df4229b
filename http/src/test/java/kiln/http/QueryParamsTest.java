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
}

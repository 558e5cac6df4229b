package kiln.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class RequestTest {
    /** @return a request for {@code path} (in normal form), routed to {@code /todos/{id}} as a router does */
    private static Request routed(String path) {
        Request r = Request.of("GET", path);
        r.routed(PathTemplate.parse("/todos/{id}"));
        return r;
    }

    @Test
    void pathParamLongTakesTheCanonicalDecimalForm() {
        assertEquals(5, routed("/todos/5").pathParamLong("id"));
        assertEquals(0, routed("/todos/0").pathParamLong("id"));
        assertEquals(10000, routed("/todos/10000").pathParamLong("id"));
        assertEquals(Long.MAX_VALUE, routed("/todos/" + Long.MAX_VALUE).pathParamLong("id"));
    }

    /** A resource with many paths defeats a rule keyed on one of them (--auth-paths): every other spelling is no resource. */
    @Test
    void pathParamLongAnswers404ForEveryOtherSpelling() {
        for (String segment : new String[] {"05", "00", "+5", "%2B5", "-5", "%205", "5%20", "%D9%A5", "5x", "0x5", "9223372036854775808"}) {
            HttpException e = assertThrows(HttpException.class, () -> routed("/todos/" + segment).pathParamLong("id"), segment);
            assertEquals(404, e.status(), segment);
        }
        assertEquals("path parameter 'id' names nothing: '05' is not a number in canonical form (decimal digits, no sign or leading zero)",
            assertThrows(HttpException.class, () -> routed("/todos/05").pathParamLong("id")).getMessage());
        assertEquals("path parameter 'id' names nothing: '+5' is not a number in canonical form (decimal digits, no sign or leading zero)",
            assertThrows(HttpException.class, () -> routed("/todos/%2B5").pathParamLong("id")).getMessage(), "the value as decoded");
        assertEquals("path parameter 'id' names nothing: '9223372036854775808' is above 9223372036854775807",
            assertThrows(HttpException.class, () -> routed("/todos/9223372036854775808").pathParamLong("id")).getMessage());
        assertEquals("path parameter 'id' names nothing: '1234567890123456789012345678901234567890...' is above 9223372036854775807",
            assertThrows(HttpException.class, () -> routed("/todos/" + "1234567890".repeat(5)).pathParamLong("id")).getMessage(),
            "a long value is shortened");
        assertThrows(IllegalArgumentException.class, () -> routed("/todos/5").pathParamLong("nope"));
    }
}

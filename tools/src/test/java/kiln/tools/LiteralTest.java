package kiln.tools;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import kiln.db.Tuple;

/** Keys print as they are typed, and a printed key types back to its bytes; values print as what they look like. */
class LiteralTest {
    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void roundTrip(byte[] key, String printed) {
        assertEquals(printed, Literal.key(key));
        assertArrayEquals(key, Literal.parse(printed), printed);
    }

    @Test
    void eachKindOfKeyPrintsAndTypesBack() {
        roundTrip(utf8("ada@example.org"), "\"ada@example.org\"");
        roundTrip(utf8("フレームワーク \"q\""), "\"フレームワーク \\\"q\\\"\"");
        roundTrip(Tuple.of("lobby", 3L).pack(), "(\"lobby\", 3)");
        roundTrip(Tuple.of("a", -7L, null, true, new byte[] {0, 1}, Tuple.of("n", 0L)).pack(), "(\"a\", -7, null, true, 0x0001, (\"n\", 0))");
        UUID u = UUID.fromString("123e4567-e89b-12d3-a456-426614174000");
        Instant at = Instant.parse("2026-11-28T10:00:00.5Z");
        roundTrip(Tuple.of(u, at).pack(), "(uuid:" + u + ", instant:" + at + ")");
        roundTrip(ByteBuffer.allocate(4).putInt(42 ^ Integer.MIN_VALUE).array(), "int:42");
        roundTrip(ByteBuffer.allocate(4).putInt(-5 ^ Integer.MIN_VALUE).array(), "int:-5");
        roundTrip(ByteBuffer.allocate(8).putLong(7L ^ Long.MIN_VALUE).array(), "long:7");
        roundTrip(new byte[] {(byte) 0x80, 0, 1}, "0x800001");
        assertArrayEquals(utf8("ada"), Literal.parse("str:ada"));
    }

    @Test
    void valuesPrintAsJsonTextNumbersOrHex() {
        assertEquals("{\"id\":1,\"name\":\"ada\"}", Literal.value(utf8("{ \"id\": 1,\n \"name\": \"ada\" }")));
        assertEquals("\"fortune: No such file or directory\"", Literal.value(utf8("fortune: No such file or directory")));
        assertEquals("\"42 things\"", Literal.value(utf8("42 things")));
        assertEquals("int:6699", Literal.value(ByteBuffer.allocate(4).putInt(6699 ^ Integer.MIN_VALUE).array()));
        assertEquals("0x00ff01", Literal.value(new byte[] {0, (byte) 0xFF, 1}));
    }

    @Test
    void aKeyThatIsNotOneOfTheFormsIsRefusedNamingThem() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Literal.parse("lobby"));
        assertTrue(e.getMessage().contains("int:42"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Literal.parse("(\"lobby\", 3"));
        assertThrows(IllegalArgumentException.class, () -> Literal.parse("int:x"));
        assertThrows(IllegalArgumentException.class, () -> Literal.parse("(lobby)"));
    }
}

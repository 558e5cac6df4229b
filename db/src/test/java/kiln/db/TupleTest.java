package kiln.db;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tuple keys: FoundationDB's encodings byte for byte, bad input, and prefix scans in a real table. */
class TupleTest {
    @TempDir Path dir;

    private static String hex(Tuple t) {
        return HexFormat.of().formatHex(t.pack());
    }

    /** The test cases of FoundationDB's design/tuple.md, and its integer rules at their edges. */
    @Test
    void encodingsAreFoundationDbs() {
        assertEquals("01666f6f00ff62617200", hex(Tuple.of("foo\0bar".getBytes(java.nio.charset.StandardCharsets.US_ASCII))));
        assertEquals("0246c3944f00ff62617200", hex(Tuple.of("F\u00d4O\u0000bar")));
        assertEquals("0502666f6f00ff62617200" + "00ff" + "05" + "00" + "00", hex(Tuple.of(Tuple.of("foo\0bar", null, Tuple.of()))));
        assertEquals("11ab4b93", hex(Tuple.of(-5551212)));
        assertEquals("14", hex(Tuple.of(0)));
        assertEquals("1501", hex(Tuple.of(1)));
        assertEquals("13fe", hex(Tuple.of(-1)));
        assertEquals("16ffff", hex(Tuple.of(65535)));
        assertEquals("1c7fffffffffffffff", hex(Tuple.of(Long.MAX_VALUE)));
        assertEquals("0c7fffffffffffffff", hex(Tuple.of(Long.MIN_VALUE)));
        assertEquals("00", hex(Tuple.of((Object) null)));
        assertEquals("2627", hex(Tuple.of(false, true)));
        assertEquals("30" + "0123456789abcdef" + "fedcba9876543210", hex(Tuple.of(new UUID(0x0123456789abcdefL, 0xfedcba9876543210L))));
        assertEquals("40" + "8000000000000001" + "00000002", hex(Tuple.of(Instant.ofEpochSecond(1, 2))));
    }

    @Test
    void integersOfEveryWidthAreLongsAndCompareAsNumbers() {
        assertEquals(Tuple.of(7L), Tuple.of(7));
        assertEquals(Tuple.of(7L), Tuple.of((short) 7));
        assertEquals(7L, Tuple.unpack(Tuple.of(7).pack()).getLong(0));
        assertTrue(Tuple.of(-300).compareTo(Tuple.of(-2)) < 0 && Tuple.of(-2).compareTo(Tuple.of(255)) < 0);
    }

    @Test
    void badEncodingsAndElementsAreRefusedNamingTheProblem() {
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> Tuple.unpack(new byte[] {0x21, 0, 0}));
        assertEquals("not a tuple encoding: at byte 0, unknown type code 0x21", unknown.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Tuple.unpack(new byte[] {0x02, 'a'})).getMessage()
            .contains("without its 0x00 terminator"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Tuple.unpack(new byte[] {0x1c, (byte) 0x80, 0, 0, 0, 0, 0, 0, 0}))
            .getMessage().contains("beyond a long"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Tuple.unpack(new byte[] {0x16, 1})).getMessage().contains("truncated"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Tuple.of(1.5)).getMessage().contains("java.lang.Double"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Tuple.of("\ud800")).getMessage().contains("unpaired surrogate"));
    }

    @Test
    void aByteArrayIsCopiedInAndOut() {
        byte[] b = {1, 2};
        Tuple t = Tuple.of(b);
        b[0] = 9;
        ((byte[]) t.get(0))[1] = 9;
        assertArrayEquals(new byte[] {1, 2}, (byte[]) t.get(0));
    }

    /** A room's prefix covers exactly its messages, newest first by a negated time, in a real table. */
    @Test
    void aPrefixScanVisitsExactlyTheTuplesThatExtendIt() {
        try (Db db = Engines.open(dir)) {
            Table<Tuple, String> messages = db.table("messages", Codec.TUPLE, Codec.STRING);
            db.write(txn -> {
                for (String room : List.of("room", "room2", "roo", "room\0")) {
                    for (long at = 1; at <= 3; at++) messages.put(txn, Tuple.of(room, -at, UUID.nameUUIDFromBytes(new byte[] {(byte) at})), room + "@" + at);
                }
                return null;
            }).join();
            List<String> seen = new ArrayList<>();
            db.read(txn -> messages.scanPrefix(txn, Tuple.of("room"), (k, v) -> seen.add(v))).join();
            assertEquals(List.of("room@3", "room@2", "room@1"), seen, "newest first, and no other room: 'room2', 'roo' and 'room\\0' differ");
            assertEquals(Tuple.of("roo", -3L, UUID.nameUUIDFromBytes(new byte[] {3})), db.read(messages::firstKey).join());
        }
    }
}

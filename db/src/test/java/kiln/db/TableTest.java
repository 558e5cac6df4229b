package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tables, codecs and key order: what a query sees through {@link Table}. */
class TableTest {
    /** A small value class with its own codec, as a user would write one. */
    static final class Point {
        final int x;
        final int y;

        Point(int x, int y) {
            this.x = x;
            this.y = y;
        }

        @Override public boolean equals(Object o) {
            return o instanceof Point && ((Point) o).x == x && ((Point) o).y == y;
        }

        @Override public int hashCode() {
            return 31 * x + y;
        }

        @Override public String toString() {
            return "Point(" + x + "," + y + ")";
        }
    }

    static final Codec<Point> POINT = new Codec<>() {
        @Override public int size(Point p) { return 8; }
        @Override public void write(Point p, ByteBuffer out) { out.putInt(p.x).putInt(p.y); }
        @Override public Point read(ByteBuffer in) { return new Point(in.getInt(), in.getInt()); }
    };

    @TempDir Path dir;
    Db db;

    @BeforeEach
    void open() {
        db = Engines.open(dir);
    }

    @AfterEach
    void close() {
        db.close();
    }

    private <K, V> void putAll(Table<K, V> table, Map<K, V> entries) {
        db.write(txn -> {
            entries.forEach((k, v) -> table.put(txn, k, v));
            return null;
        }).join();
    }

    private <K, V> List<K> keysInScanOrder(Table<K, V> table, K from) {
        return db.read(txn -> {
            List<K> keys = new ArrayList<>();
            table.scan(txn, from, (k, v) -> keys.add(k));
            return keys;
        }).join();
    }

    @Test
    void intKeysAndValuesRoundTrip() {
        Table<Integer, Integer> t = db.table("ints", Codec.INT, Codec.INT);
        Map<Integer, Integer> entries = Map.of(Integer.MIN_VALUE, -1, -7, Integer.MAX_VALUE, 0, 0, 42, Integer.MIN_VALUE, Integer.MAX_VALUE, 12345);
        putAll(t, entries);
        entries.forEach((k, v) -> assertEquals(v, db.read(txn -> t.get(txn, k)).join(), "key " + k));
    }

    @Test
    void longKeysAndValuesRoundTrip() {
        Table<Long, Long> t = db.table("longs", Codec.LONG, Codec.LONG);
        Map<Long, Long> entries = Map.of(Long.MIN_VALUE, -1L, -7L, Long.MAX_VALUE, 0L, 0L, 1L << 40, Long.MIN_VALUE, Long.MAX_VALUE, 99L);
        putAll(t, entries);
        entries.forEach((k, v) -> assertEquals(v, db.read(txn -> t.get(txn, k)).join(), "key " + k));
    }

    @Test
    void stringKeysAndValuesRoundTripIncludingNonAsciiAndEmpty() {
        Table<String, String> t = db.table("strings", Codec.STRING, Codec.STRING);
        // 2-, 3- and 4-byte UTF-8 sequences: a wrong size() makes put() throw or corrupt the key
        Map<String, String> entries = Map.of("plain", "value", "h\u00e9llo", "\u65e5\u672c\u8a9e", "smile \ud83d\ude00", "\ud83d\ude00\ud83d\ude00", "empty", "");
        putAll(t, entries);
        entries.forEach((k, v) -> assertEquals(v, db.read(txn -> t.get(txn, k)).join(), "key " + k));
    }

    @Test
    void customCodecRoundTrips() {
        Table<Point, Point> t = db.table("points", POINT, POINT);
        putAll(t, Map.of(new Point(1, -2), new Point(-3, 4)));
        assertEquals(new Point(-3, 4), db.read(txn -> t.get(txn, new Point(1, -2))).join());
    }

    @Test
    void missingKeyReadsAsNullOrTheGivenDefault() {
        Table<Integer, String> t = db.table("names", Codec.INT, Codec.STRING);
        assertNull(db.read(txn -> t.get(txn, 1)).join());
        assertEquals("none", db.read(txn -> t.get(txn, 1, "none")).join());
    }

    @Test
    void negativeIntKeysScanBeforePositiveOnes() {
        Table<Integer, Integer> t = db.table("ints", Codec.INT, Codec.INT);
        putAll(t, Map.of(5, 0, -3, 0, 0, 0, Integer.MIN_VALUE, 0, Integer.MAX_VALUE, 0, -1, 0, 256, 0));
        assertEquals(List.of(Integer.MIN_VALUE, -3, -1, 0, 5, 256, Integer.MAX_VALUE), keysInScanOrder(t, null));
    }

    @Test
    void negativeLongKeysScanBeforePositiveOnes() {
        Table<Long, Long> t = db.table("longs", Codec.LONG, Codec.LONG);
        putAll(t, Map.of(5L, 0L, -3L, 0L, 0L, 0L, Long.MIN_VALUE, 0L, Long.MAX_VALUE, 0L, -1L, 0L, 1L << 33, 0L));
        assertEquals(List.of(Long.MIN_VALUE, -3L, -1L, 0L, 5L, 1L << 33, Long.MAX_VALUE), keysInScanOrder(t, null));
    }

    @Test
    void scanStartsAtTheFirstKeyAtOrAfterFrom() {
        Table<Integer, Integer> t = db.table("ints", Codec.INT, Codec.INT);
        putAll(t, Map.of(-20, 0, 10, 0, 20, 0, 30, 0, 40, 0));
        assertEquals(List.of(30, 40), keysInScanOrder(t, 25));
        assertEquals(List.of(20, 30, 40), keysInScanOrder(t, 20));
        assertEquals(List.of(10, 20, 30, 40), keysInScanOrder(t, -5));
        assertEquals(List.of(), keysInScanOrder(t, 41));
    }

    @Test
    void scanStopsWhenTheVisitorReturnsFalseAndPassesValues() {
        Table<Integer, String> t = db.table("names", Codec.INT, Codec.STRING);
        putAll(t, Map.of(1, "one", 2, "two", 3, "three", 4, "four"));
        List<String> seen = new ArrayList<>();
        long visited = db.read(txn -> t.scan(txn, (k, v) -> seen.add(v) && k < 2)).join();
        assertEquals(2, visited);
        assertEquals(List.of("one", "two"), seen);
    }

    @Test
    void countFollowsPutsAndDeletes() {
        Table<Integer, Integer> t = db.table("ints", Codec.INT, Codec.INT);
        assertEquals(0L, db.read(t::count).join());
        putAll(t, Map.of(1, 1, 2, 2, 3, 3));
        putAll(t, Map.of(2, 20)); // replacing a value does not add an entry
        assertEquals(3L, db.read(t::count).join());
        db.write(txn -> t.delete(txn, 1)).join();
        assertEquals(2L, db.read(t::count).join());
    }

    @Test
    void deleteRemovesTheKeyAndReportsWhetherItWasPresent() {
        Table<Integer, String> t = db.table("names", Codec.INT, Codec.STRING);
        putAll(t, Map.of(1, "one", 2, "two"));
        assertTrue(db.write(txn -> t.delete(txn, 1)).join());
        assertFalse(db.write(txn -> t.delete(txn, 1)).join());
        assertNull(db.read(txn -> t.get(txn, 1)).join());
        assertEquals("two", db.read(txn -> t.get(txn, 2)).join());
    }

    @Test
    void tablesAreSeparateNamespaces() {
        Table<Integer, String> a = db.table("a", Codec.INT, Codec.STRING);
        Table<Integer, String> b = db.table("b", Codec.INT, Codec.STRING);
        putAll(a, Map.of(1, "in a"));
        assertNull(db.read(txn -> b.get(txn, 1)).join());
        assertEquals("in a", db.read(txn -> a.get(txn, 1)).join());
    }

    @Test
    void putInAReadTransactionIsIllegalState() {
        Table<Integer, Integer> t = db.table("ints", Codec.INT, Codec.INT);
        QueryFuture<Object> put = db.read(txn -> { t.put(txn, 1, 1); return null; });
        QueryFuture<Boolean> delete = db.read(txn -> t.delete(txn, 1));
        assertInstanceOf(IllegalStateException.class, assertThrows(CompletionException.class, put::join).getCause());
        assertInstanceOf(IllegalStateException.class, assertThrows(CompletionException.class, delete::join).getCause());
        assertNull(db.read(txn -> t.get(txn, 1)).join());
    }

    @Test
    void keyLongerThan511BytesIsIllegalArgument() {
        Table<String, String> t = db.table("strings", Codec.STRING, Codec.STRING);
        String longest = "k".repeat(511);
        String tooLong = "k".repeat(512);
        db.write(txn -> { t.put(txn, longest, "fits"); return null; }).join();
        assertEquals("fits", db.read(txn -> t.get(txn, longest)).join());

        QueryFuture<Object> put = db.write(txn -> { t.put(txn, tooLong, "no"); return null; });
        QueryFuture<String> get = db.read(txn -> t.get(txn, tooLong));
        assertInstanceOf(IllegalArgumentException.class, assertThrows(CompletionException.class, put::join).getCause());
        assertInstanceOf(IllegalArgumentException.class, assertThrows(CompletionException.class, get::join).getCause());
        // 256 two-byte characters: 256 chars but 512 bytes, so the limit is on bytes
        QueryFuture<String> wide = db.read(txn -> t.get(txn, "\u00e9".repeat(256)));
        assertInstanceOf(IllegalArgumentException.class, assertThrows(CompletionException.class, wide::join).getCause());
    }

    @Test
    void codecWritingMoreThanItsSizeIsRejected() {
        Codec<Integer> lying = new Codec<>() {
            @Override public int size(Integer v) { return 4; }
            @Override public void write(Integer v, ByteBuffer out) { out.putLong(v); }
            @Override public Integer read(ByteBuffer in) { return (int) in.getLong(); }
        };
        Table<Integer, Integer> t = db.table("lying", Codec.INT, lying);
        QueryFuture<Object> put = db.write(txn -> { t.put(txn, 1, 1); return null; });
        assertThrows(CompletionException.class, put::join);
        assertNull(db.read(txn -> t.get(txn, 1)).join(), "the failed put was rolled back");
    }
}

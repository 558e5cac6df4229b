package kiln.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A put or delete is encoded when the query makes it: the bytes that go to the table are the bytes
 * that go to the change feed and its durable log, whatever the handler does with its objects
 * afterwards, and a value the codec refuses fails that query alone.
 */
class EncodeAtPutTest {
    /** A mutable value, as handlers' own classes often are. */
    static final class Note {
        String text;

        Note(String text) {
            this.text = text;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Note n && java.util.Objects.equals(n.text, text);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hashCode(text);
        }

        @Override
        public String toString() {
            return "Note(" + text + ")";
        }
    }

    /** UTF-8 text; refuses a note whose text is null, as a codec refuses a value it cannot write. */
    static final Codec<Note> NOTES = new Codec<>() {
        @Override
        public int size(Note n) {
            if (n.text == null) throw new IllegalArgumentException("a note needs a text");
            return Keys.utf8Length(n.text);
        }

        @Override
        public void write(Note n, ByteBuffer out) {
            out.put(n.text.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public Note read(ByteBuffer in) {
            byte[] b = new byte[in.remaining()];
            in.get(b);
            return new Note(new String(b, StandardCharsets.UTF_8));
        }
    };

    @TempDir Path dir;
    Db db;

    @AfterEach
    void close() {
        if (db != null) db.close();
    }

    private Table<Integer, Note> open() {
        db = Engines.open(dir);
        return db.table("notes", Codec.INT, NOTES);
    }

    @Test
    void aValueChangedAfterPutChangesNeitherTheTableNorTheFeed() throws Exception {
        Table<Integer, Note> notes = open();
        ChangeFeed<Integer, Note> feed = db.changeFeed(notes, 100);
        WriterGate gate = new WriterGate(db);
        QueryFuture<Object> write;
        try {
            write = db.write(txn -> {
                Note n = new Note("as put");
                notes.put(txn, 1, n);
                n.text = "changed after put";
                return null;
            });
        } finally {
            gate.open();
        }
        write.join();
        assertEquals(new Note("as put"), db.read(txn -> notes.get(txn, 1)).join());
        assertEquals(List.of(new ChangeSet.Change<>(1, new Note("as put"))), feed.read(0, 10).get(0).changes(), "the feed in memory");
        db.close();
        db = Engines.open(dir);
        Table<Integer, Note> reopened = db.table("notes", Codec.INT, NOTES);
        ChangeFeed<Integer, Note> log = db.changeFeed(reopened, 100);
        assertEquals(List.of(new ChangeSet.Change<>(1, new Note("as put"))), log.read(0, 10).get(0).changes(), "the durable log");
    }

    @Test
    void aValueChangedAfterPutIntoOneTheCodecRefusesFailsNoBatchMate() throws Exception {
        Table<Integer, Note> notes = open();
        ChangeFeed<Integer, Note> feed = db.changeFeed(notes, 100);
        WriterGate gate = new WriterGate(db);
        List<QueryFuture<Object>> writes = new ArrayList<>();
        try {
            for (int i = 0; i < 10; i++) {
                int k = i;
                writes.add(db.write(txn -> {
                    Note n = new Note("note " + k);
                    notes.put(txn, k, n);
                    if (k % 3 == 0) n.text = null;  // a handler reusing its object; the codec refuses this state
                    return null;
                }));
            }
        } finally {
            gate.open();
        }
        for (QueryFuture<Object> w : writes) w.join();
        for (int i = 0; i < 10; i++) {
            int k = i;
            assertEquals(new Note("note " + k), db.read(txn -> notes.get(txn, k)).join());
        }
        assertEquals(10, feed.lastSeq());
    }

    @Test
    void aValueTheCodecRefusesAtPutRollsBackThatQueryAlone() throws Exception {
        Table<Integer, Note> notes = open();
        ChangeFeed<Integer, Note> feed = db.changeFeed(notes, 100);
        WriterGate gate = new WriterGate(db);
        QueryFuture<Object> before;
        QueryFuture<Object> refused;
        QueryFuture<Object> after;
        try {
            before = db.write(txn -> { notes.put(txn, 1, new Note("one")); return null; });
            refused = db.write(txn -> { notes.put(txn, 2, new Note("two")); notes.put(txn, 3, new Note(null)); return null; });
            after = db.write(txn -> { notes.put(txn, 4, new Note("four")); return null; });
        } finally {
            gate.open();
        }
        before.join();
        after.join();
        assertInstanceOf(IllegalArgumentException.class, assertThrows(CompletionException.class, refused::join).getCause());
        assertNull(db.read(txn -> notes.get(txn, 2)).join(), "the refused query's first put was rolled back with it");
        assertEquals(List.of(1, 4), feed.read(0, 10).stream().map(s -> s.changes().get(0).key()).toList());
    }

    @Test
    void aKeyChangedAfterPutOrDeleteIsRecordedAsItWasWritten() throws Exception {
        db = Engines.open(dir);
        Table<List<Integer>, Integer> table = db.table("pairs", LIST_KEYS, Codec.INT);
        ChangeFeed<List<Integer>, Integer> feed = db.changeFeed(table, 100);
        db.write(txn -> {
            List<Integer> key = new ArrayList<>(List.of(1, 2));
            table.put(txn, key, 12);
            key.set(1, 3);
            table.put(txn, key, 13);
            table.delete(txn, key);
            key.set(1, 9);
            return null;
        }).join();
        assertEquals(List.of(new ChangeSet.Change<>(List.of(1, 2), 12), new ChangeSet.Change<>(List.of(1, 3), 13),
            new ChangeSet.Change<>(List.of(1, 3), null)), feed.read(0, 10).get(0).changes());
    }

    /** A list of ints as a key, each big-endian: a mutable key object. */
    static final Codec<List<Integer>> LIST_KEYS = new Codec<>() {
        @Override
        public int size(List<Integer> v) {
            return 4 * v.size();
        }

        @Override
        public void write(List<Integer> v, ByteBuffer out) {
            for (int i : v) out.putInt(i);
        }

        @Override
        public List<Integer> read(ByteBuffer in) {
            List<Integer> v = new ArrayList<>();
            while (in.hasRemaining()) v.add(in.getInt());
            return v;
        }
    };
}

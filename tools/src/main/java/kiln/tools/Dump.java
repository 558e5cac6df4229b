package kiln.tools;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;

import kiln.db.KvCursor;
import kiln.db.KvEngine;
import kiln.db.KvSpace;
import kiln.db.KvTxn;

/**
 * A database as a stream of entries: a header, then each key space in the engine's order of names
 * with its entries in key order and a footer that counts and digests them, then an end. The dump
 * file ({@link DumpFile}) writes and reads it, {@link Loader} writes it into an engine, and
 * {@link #read} reads it from an engine's snapshot: {@code dump} is read then written to a file,
 * {@code load} read from a file then loaded, {@code copy} read then loaded, in one process.
 */
final class Dump {
    /** The version of the dump's format this tool writes and reads. */
    static final int VERSION = 1;

    private Dump() {
    }

    /**
     * @param source the database's location (a URL without its password)
     * @param engine the engine's name ({@code lmdb}, {@code postgresql})
     * @param taken when its snapshot began
     * @param spaces every space the dump holds, in order
     */
    record Header(String source, String engine, Instant taken, List<String> spaces) {
    }

    /** What a dump is given to, in order: {@code begin}, then per space {@code space}, its {@code entry}s and {@code end}, then {@code finish}. */
    interface Sink {
        void begin(Header header);

        /** @param expected the entries the source counted in it */
        void space(String name, long expected);

        /** @param key, value valid during the call only */
        void entry(ByteBuffer key, ByteBuffer value);

        /** @param sha256 the {@link Digest} of its entries */
        void end(String name, long entries, byte[] sha256);

        void finish(long spaces, long entries);
    }

    /**
     * The SHA-256 of a space's entries in order, each as its key's length (4 bytes, big-endian), the
     * key, its value's length and the value: what a dump's footer holds and a load or a copy checks.
     */
    static final class Digest {
        private final MessageDigest sha;
        private final ByteBuffer length = ByteBuffer.allocate(4);
        private long entries;

        Digest() {
            try {
                sha = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        void add(ByteBuffer key, ByteBuffer value) {
            part(key);
            part(value);
            entries++;
        }

        private void part(ByteBuffer b) {
            sha.update(length.clear().putInt(b.remaining()).flip());
            sha.update(b.duplicate());
        }

        long entries() {
            return entries;
        }

        byte[] sha256() {
            return sha.digest();
        }
    }

    static String hex(byte[] digest) {
        return HexFormat.of().formatHex(digest);
    }

    /**
     * Reads the spaces {@code names} of {@code engine} in one read transaction, a consistent
     * snapshot however long it takes, into {@code sink}.
     *
     * @param names the spaces to read, or null for every one
     * @return the sink's header: what was read
     */
    static Header read(KvEngine engine, String engineName, List<String> names, Sink sink) {
        try (KvTxn txn = engine.beginRead()) {
            List<String> spaces = Layout.only(engine.spaceNames(txn), names);
            Header header = new Header(Layout.where(engine), engineName, Instant.now(), spaces);
            sink.begin(header);
            long entries = 0;
            for (String name : spaces) {
                KvSpace space = engine.space(txn, name, false);
                sink.space(name, txn.count(space));
                Digest digest = new Digest();
                try (KvCursor c = txn.range(space, null, null, false, 0)) {
                    while (c.next()) {
                        ByteBuffer k = c.key();
                        ByteBuffer v = c.value();
                        digest.add(k, v);
                        sink.entry(k, v);
                    }
                }
                sink.end(name, digest.entries(), digest.sha256());
                entries += digest.entries();
            }
            sink.finish(spaces.size(), entries);
            return header;
        }
    }
}

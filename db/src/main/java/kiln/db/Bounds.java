package kiln.db;

import java.util.function.Supplier;

/**
 * A {@link Range} of a table or an index as the engine's {@code [begin, end)} (null: unbounded), with
 * its encoded prefix (whose tuple rule, {@link Codec#extendsPrefix}, the engine cannot apply) and
 * its fingerprint for continuations, made when first needed (a SHA-256 a page without a next page
 * does not pay for).
 */
final class Bounds {
    final byte[] begin;
    final byte[] end;
    final byte[] prefix;
    private final Supplier<byte[]> fingerprinter;
    private byte[] fingerprint;

    Bounds(byte[] begin, byte[] end, byte[] prefix, Supplier<byte[]> fingerprinter) {
        this.begin = begin;
        this.end = end;
        this.prefix = prefix;
        this.fingerprinter = fingerprinter;
    }

    byte[] fingerprint() {
        if (fingerprint == null) fingerprint = fingerprinter.get();
        return fingerprint;
    }
}

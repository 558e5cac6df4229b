package kiln.db;

import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The tuple encoding's two promises, for arbitrary tuples of every element kind, nested ones
 * included: LMDB's byte order (unsigned) is the tuples' order, and decoding an encoding gives the
 * tuple back. Also: a tuple's encoding is a prefix of every tuple's that extends it.
 */
class TuplePropertyTest {
    @Property(tries = 2000)
    void byteOrderIsTupleOrder(@ForAll("tuples") Tuple a, @ForAll("tuples") Tuple b) {
        int bytes = Integer.signum(Arrays.compareUnsigned(a.pack(), b.pack()));
        int tuples = Integer.signum(a.compareTo(b));
        if (bytes != tuples) throw new AssertionError(a + " vs " + b + ": bytes say " + bytes + ", tuples " + tuples);
        if ((tuples == 0) != a.equals(b)) throw new AssertionError(a + " vs " + b + ": compareTo and equals disagree");
    }

    @Property(tries = 2000)
    void decodingAnEncodingGivesTheTupleBack(@ForAll("tuples") Tuple t) {
        byte[] packed = t.pack();
        if (packed.length != t.packedSize()) throw new AssertionError(t + ": packedSize " + t.packedSize() + ", pack " + packed.length);
        Tuple back = Tuple.unpack(packed);
        if (!back.equals(t) || back.hashCode() != t.hashCode()) throw new AssertionError(t + " came back as " + back);
    }

    @Property(tries = 1000)
    void aTuplesEncodingPrefixesEveryExtensionOfIt(@ForAll("tuples") Tuple t, @ForAll("elements") Object more) {
        byte[] prefix = t.pack();
        byte[] longer = t.add(more).pack();
        if (!Arrays.equals(prefix, 0, prefix.length, longer, 0, prefix.length)) throw new AssertionError(t + " + " + more);
    }

    @Provide
    Arbitrary<Tuple> tuples() {
        return tuplesOf(elements(), 0);
    }

    private Arbitrary<Tuple> tuplesOf(Arbitrary<Object> elements, int depth) {
        Arbitrary<Object> withNested = depth >= 2 ? elements
            : Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(8, elements), net.jqwik.api.Tuple.of(1, tuplesOf(elements, depth + 1).map(t -> (Object) t)));
        return withNested.list().ofMaxSize(4).map(Tuple::from);
    }

    @Provide
    Arbitrary<Object> elements() {
        return Arbitraries.oneOf(List.of(
            Arbitraries.just(null),
            Arbitraries.bytes().array(byte[].class).ofMaxSize(6).map(b -> (Object) b),
            Arbitraries.strings().all().ofMaxLength(6).filter(TuplePropertyTest::validUtf16).map(s -> (Object) s),
            Arbitraries.longs().map(l -> (Object) l),                       // every length up to 8 bytes, MIN_VALUE and MAX_VALUE among the edges
            Arbitraries.longs().between(-70_000, 70_000).map(l -> (Object) l),  // 1- to 3-byte integers, both signs
            Arbitraries.integers().map(i -> (Object) i),
            Arbitraries.of(Boolean.TRUE, Boolean.FALSE).map(b -> (Object) b),
            Arbitraries.longs().tuple2().map(p -> (Object) new UUID(p.get1(), p.get2())),
            Arbitraries.longs().between(Instant.MIN.getEpochSecond(), Instant.MAX.getEpochSecond())
                .flatMap(s -> Arbitraries.integers().between(0, 999_999_999).map(n -> (Object) Instant.ofEpochSecond(s, n)))));
    }

    private static boolean validUtf16(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) i++;
            else if (Character.isSurrogate(c)) return false;
        }
        return true;
    }
}

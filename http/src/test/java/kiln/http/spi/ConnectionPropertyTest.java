package kiln.http.spi;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntSupplier;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import kiln.http.Response;
import kiln.http.Request;

/**
 * What a connection does does not depend on how TCP cut the stream: for any sequence of pipelined
 * requests (valid ones of every framing, HTTP/1.0 and 1.1, a 100-continue, a head that outgrows the
 * first buffer, a refusal), the requests its handler sees and the bytes it writes are the same
 * whether the input arrives in one read or in reads of any sizes (the first, perhaps, read by the
 * front end before the connection had a buffer, as Kilim's selector does), and whatever the sizes of
 * the partial writes its output goes out in. The one difference allowed: {@code 100 Continue} is sent
 * only when the content had not arrived with the head (RFC 9110 section 10.1.1), so it is left out
 * of the comparison.
 */
class ConnectionPropertyTest {
    private static final List<String> REQUESTS = List.of(
        "GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET /b?q=1 HTTP/1.1\r\nHost: h\r\nAccept: text/plain\r\n\r\n",
        "HEAD /c HTTP/1.1\r\nHost: h\r\n\r\n",
        "POST /d HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
        "POST /e HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n",
        "POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 3000\r\nExpect: 100-continue\r\n\r\n" + "z".repeat(3000),
        "GET /g HTTP/1.1\r\nHost: h\r\nX-Big: " + "b".repeat(3000) + "\r\n\r\n",
        "\r\nGET /h HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "GET /i HTTP/1.0\r\n\r\n",                                                  // closes after its answer
        "GET /j HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        "GET /k HTTP/9.9\r\n\r\n",                                                  // 505, then a lingering close
        "POST /l HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy");  // 400

    private static final String CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n";

    /** What a run showed: the requests the handler saw, the bytes written, and how the connection ended. */
    private record Outcome(List<String> seen, String written, Connection.Action last, boolean lingered) {
    }

    @Property(tries = 400)
    void theRequestsSeenAndTheBytesWrittenDoNotDependOnHowReadsAndWritesCutTheStream(
        @ForAll("conversations") List<String> requests,
        @ForAll @Size(max = 20) List<@IntRange(min = 1, max = 700) Integer> readSizes,
        @ForAll @Size(max = 20) List<@IntRange(min = 1, max = 700) Integer> writeSizes,
        @ForAll boolean arrivedBeforeABuffer) {
        byte[] input = String.join("", requests).getBytes(StandardCharsets.ISO_8859_1);
        Outcome whole = run(List.of(input), false, () -> Integer.MAX_VALUE);
        Outcome cut = run(cut(input, readSizes), arrivedBeforeABuffer, cycle(writeSizes));
        if (!whole.equals(cut)) {
            throw new AssertionError("in one read:\n" + whole + "\ncut into reads of " + readSizes + ", writes of " + writeSizes
                + (arrivedBeforeABuffer ? ", the first read before a buffer" : "") + ":\n" + cut);
        }
    }

    @Provide
    Arbitrary<List<String>> conversations() {
        return Arbitraries.of(REQUESTS).list().ofMinSize(1).ofMaxSize(6);
    }

    private static Outcome run(List<byte[]> reads, boolean arrivedBeforeABuffer, IntSupplier writeSizes) {
        List<String> seen = new ArrayList<>();
        Driver d = new Driver(r -> {
            seen.add(describe(r));
            return Response.text(describe(r));
        });
        d.writeSizes = writeSizes;
        int first = 0;
        if (arrivedBeforeABuffer && !reads.isEmpty()) {
            d.c.received(reads.get(0));
            first = 1;
        }
        for (byte[] read : reads.subList(first, reads.size())) d.send(read);
        Connection.Action last = d.endInput().run();
        return new Outcome(seen, d.takeWritten().replace(CONTINUE, ""), last, d.outputShut);
    }

    private static String describe(Request r) {
        return r.method() + " " + r.target() + " HTTP/1." + r.minorVersion() + " [" + new String(r.body(), StandardCharsets.ISO_8859_1) + "]";
    }

    /** @return {@code input} in pieces of the sizes given, in turn, the last piece what is left; one piece when none are given */
    private static List<byte[]> cut(byte[] input, List<Integer> sizes) {
        if (sizes.isEmpty()) return List.of(input);
        List<byte[]> pieces = new ArrayList<>();
        IntSupplier next = cycle(sizes);
        for (int off = 0; off < input.length;) {
            int end = Math.min(input.length, off + next.getAsInt());
            pieces.add(Arrays.copyOfRange(input, off, end));
            off = end;
        }
        return pieces;
    }

    /** @return the sizes given, over and over; all at once when none are given */
    private static IntSupplier cycle(List<Integer> sizes) {
        if (sizes.isEmpty()) return () -> Integer.MAX_VALUE;
        int[] i = {0};
        return () -> sizes.get(i[0]++ % sizes.size());
    }
}

package kiln.http.spi;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What a client that trickles its request one byte per read costs the parser: the connection calls
 * {@link RequestParser#parse} after every read, either resuming a {@link RequestParser.Progress}
 * (what {@link Connection} does for both front ends) or from the request's first byte (what it did before). The
 * request is the worst the limits allow in spirit: a 16 KB header field, then 20,000 one-byte chunks
 * (136 KB in all). Prints wall-clock times measured on this one thread; run with {@code make bench-parser}.
 * A benchmark, not a test: nothing is asserted.
 */
public final class TrickleBench {
    private TrickleBench() {
    }

    public static void main(String[] args) {
        byte[] request = trickledRequest(20_000);
        System.out.printf("request: %,d bytes (16 KB header field, 20,000 one-byte chunks), parsed after every byte%n", request.length);

        long[] resumed = new long[7];
        for (int round = 0; round < resumed.length; round++) resumed[round] = everyByte(request, true);
        Arrays.sort(resumed);
        System.out.printf("resumed (RequestParser.Progress): %8.1f ms  (median of %d rounds)%n", resumed[resumed.length / 2] / 1e6, resumed.length);

        long fresh = everyByte(request, false);
        System.out.printf("from the first byte every time:   %8.1f ms  (one round)%n", fresh / 1e6);
        System.out.printf("ratio: %.0fx%n", (double) fresh / resumed[resumed.length / 2]);
    }

    /** Parses every prefix of {@code request} in turn, as reads one byte long would; returns nanoseconds. */
    private static long everyByte(byte[] request, boolean resume) {
        RequestParser.Progress progress = new RequestParser.Progress();
        long start = System.nanoTime();
        RequestParser.Parsed parsed = null;
        for (int end = 1; end <= request.length && parsed == null; end++) {
            parsed = resume ? RequestParser.parse(request, 0, end, progress) : RequestParser.parse(request, 0, end);
        }
        long took = System.nanoTime() - start;
        if (parsed == null || parsed.length != request.length) throw new IllegalStateException("the request did not parse whole");
        return took;
    }

    private static byte[] trickledRequest(int chunks) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(ascii("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"));
        b.writeBytes(ascii("X-Big: " + "v".repeat(16_000) + "\r\n\r\n"));
        for (int i = 0; i < chunks; i++) b.writeBytes(ascii("1\r\nx\r\n"));
        b.writeBytes(ascii("0\r\n\r\n"));
        return b.toByteArray();
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}

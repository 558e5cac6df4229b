package kiln.comsat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import kiln.http.Http;
import org.eclipse.jetty.http.HttpGenerator;
import org.eclipse.jetty.http.MetaData;

/**
 * Makes Jetty 9.4 write response heads the way the contract (see {@link Http}) spells them, where
 * its {@link HttpGenerator} cannot be configured to:
 * <ul>
 *   <li>the reason phrase is {@link Http#reason}: Jetty says "Server Error" for 500 and puts its
 *       parser's message ("No URI") into the reason phrase of a 400;</li>
 *   <li>Connection comes last: Jetty adds the request's {@code Connection: keep-alive} (HTTP/1.0) or
 *       {@code Connection: close} to the response's fields when it parses the request, so it writes
 *       it first, before Server. The other fields already come in the contract's order: in the order
 *       {@link Responses} puts them (Server, Date, Content-Type, then the reply's further headers), then
 *       Content-Length, which Jetty always writes after every other field.</li>
 * </ul>
 * The status line's version is Jetty's, HTTP/1.1, as the contract says. Values are not touched.
 * The head is rewritten in place in the generator's header buffer, right after Jetty generated it
 * and before anything is written to the socket, and only when it differs from the contract's; the
 * order of fields with equal rank is kept.
 */
final class ContractHead {
    private static final byte[] CRLF = {'\r', '\n'};
    private static final byte[] END_OF_HEAD = {'\r', '\n', '\r', '\n'};
    /** Status line prefix, up to the reason phrase: "HTTP/1.1 200 ". */
    private static final int REASON_AT = "HTTP/1.1 200 ".length();

    private ContractHead() {
    }

    /** Jetty's generator, with the head of each response passed through {@link #rewrite}. */
    static final class Generator extends HttpGenerator {
        Generator() {
            super(false, false);
        }

        @Override
        public Result generateResponse(MetaData.Response info, boolean head, ByteBuffer header, ByteBuffer chunk, ByteBuffer content,
                                       boolean last) throws IOException {
            boolean startsHead = isState(State.START);
            Result result = super.generateResponse(info, head, header, chunk, content, last);
            if (startsHead && result == Result.FLUSH && info != null && header != null && !isState(State.START)) {
                rewrite(header, info.getStatus());
            }
            return result;
        }
    }

    /**
     * Rewrites the response head at the front of {@code header} (flush mode: position..limit) into
     * the contract's form, see the class comment. Bytes after the head (a chunk-size line) are kept.
     * Leaves the buffer alone if it holds no complete head (HTTP/0.9), if the status is
     * informational (1xx: Jetty's line is right), if the head is the contract's already, or if the
     * rewritten head would not fit.
     */
    static void rewrite(ByteBuffer header, int status) {
        if (status < 200) return;
        int start = header.position();
        byte[] old = new byte[header.remaining()];
        header.duplicate().get(old);
        int headEnd = indexOf(old, END_OF_HEAD, 0);
        if (headEnd < 0) return;
        int statusEnd = indexOf(old, CRLF, 0);
        if (statusEnd < REASON_AT) return;

        // Field lines: [from, to) offsets into old, without their CRLF; sorted by rank, stably.
        int n = 0;
        int[] from = new int[16];
        int[] to = new int[16];
        for (int p = statusEnd + 2; p < headEnd + 2; ) {
            int eol = indexOf(old, CRLF, p);
            if (n == from.length) {
                from = Arrays.copyOf(from, n * 2);
                to = Arrays.copyOf(to, n * 2);
            }
            from[n] = p;
            to[n] = eol;
            n++;
            p = eol + 2;
        }
        boolean reordered = false;
        for (int i = 1; i < n; i++) {
            int f = from[i];
            int t = to[i];
            int r = rank(old, f, t);
            int j = i - 1;
            while (j >= 0 && rank(old, from[j], to[j]) > r) {
                from[j + 1] = from[j];
                to[j + 1] = to[j];
                j--;
                reordered = true;
            }
            from[j + 1] = f;
            to[j + 1] = t;
        }

        byte[] reason = Http.reason(status).getBytes(StandardCharsets.US_ASCII);
        boolean reasonRight = statusEnd - REASON_AT == reason.length
            && Arrays.equals(old, REASON_AT, statusEnd, reason, 0, reason.length);
        if (!reordered && reasonRight) return;

        int rest = old.length - (headEnd + 4);
        int length = REASON_AT + reason.length + 2 + (headEnd - statusEnd) + 2 + rest;
        if (start + length > header.capacity()) return;

        header.limit(header.capacity());
        header.position(start);
        header.put(old, 0, REASON_AT).put(reason).put(CRLF);
        for (int i = 0; i < n; i++) header.put(old, from[i], to[i] - from[i]).put(CRLF);
        header.put(CRLF);
        header.put(old, headEnd + 4, rest);
        header.limit(header.position());
        header.position(start);
    }

    /**
     * Position of a field in the contract's order, by its (case-insensitive) name: Server, Date,
     * Content-Type, anything else (Allow, Retry-After), Content-Length, Connection.
     */
    private static int rank(byte[] b, int from, int to) {
        if (nameIs(b, from, to, "Server")) return 0;
        if (nameIs(b, from, to, "Date")) return 1;
        if (nameIs(b, from, to, "Content-Type")) return 2;
        if (nameIs(b, from, to, "Content-Length")) return 4;
        if (nameIs(b, from, to, "Connection")) return 5;
        return 3;
    }

    private static boolean nameIs(byte[] b, int from, int to, String name) {
        int n = name.length();
        if (to - from <= n || b[from + n] != ':') return false;
        for (int i = 0; i < n; i++) {
            if (Character.toLowerCase((char) b[from + i]) != Character.toLowerCase(name.charAt(i))) return false;
        }
        return true;
    }

    private static int indexOf(byte[] b, byte[] what, int from) {
        outer:
        for (int i = from; i <= b.length - what.length; i++) {
            for (int j = 0; j < what.length; j++) {
                if (b[i + j] != what[j]) continue outer;
            }
            return i;
        }
        return -1;
    }
}

package kiln.http.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;

import kiln.http.HttpException;
import kiln.http.Request;


/**
 * The invariants {@link RequestParser#parse} must keep whatever its input, shared by the Jazzer fuzz
 * test ({@link RequestParserFuzzTest}) and the seeded generator tests ({@link RequestParserPropertyTest}):
 * a documented outcome, no dependence on bytes outside {@code [start, end)}, and answers that more
 * bytes never undo. Failure messages carry the input, escaped, so a failure can be replayed.
 */
final class ParserChecks {

    /** Every status {@link RequestParser#parse} may throw (its class docstring and code). */
    static final Set<Integer> DOCUMENTED_STATUSES = Set.of(400, 413, 414, 431, 501, 505);

    /** Inputs up to this many bytes get every prefix checked; longer ones a sample (the check is quadratic). */
    static final int ALL_PREFIXES_UP_TO = 512;

    private ParserChecks() {
    }

    /**
     * Outcome of one parse call, comparable across calls. (No records: the parser is used from woven
     * Kilim code, and the Kilim weaver cannot read records, see FACTS.md.)
     */
    static final class Outcome {
        enum Kind { NEED_MORE, PARSED, ERROR }

        static final Outcome NEED_MORE = new Outcome(Kind.NEED_MORE, 0, null);

        private final Kind kind;
        private final int lengthOrStatus;
        private final String request;

        Outcome(Kind kind, int lengthOrStatus, String request) {
            this.kind = kind;
            this.lengthOrStatus = lengthOrStatus;
            this.request = request;
        }

        Kind kind() {
            return kind;
        }

        /** Bytes consumed for PARSED, the HTTP status for ERROR, 0 for NEED_MORE. */
        int lengthOrStatus() {
            return lengthOrStatus;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Outcome && toString().equals(o.toString());
        }

        @Override
        public int hashCode() {
            return toString().hashCode();
        }

        @Override
        public String toString() {
            return switch (kind) {
                case NEED_MORE -> "need more";
                case PARSED -> "parsed " + lengthOrStatus + " bytes: " + request;
                case ERROR -> "HttpException " + lengthOrStatus;
            };
        }

        /** Parses {@code buf[start, end)}; any exception other than HttpException propagates and fails the caller. */
        static Outcome of(byte[] buf, int start, int end) {
            return of(buf, start, end, new RequestParser.Progress());
        }

        /** Parses {@code buf[start, end)}, resuming from {@code progress}. */
        static Outcome of(byte[] buf, int start, int end, RequestParser.Progress progress) {
            try {
                RequestParser.Parsed p = RequestParser.parse(buf, start, end, progress);
                if (p == null) return NEED_MORE;
                Request r = p.request;
                String summary = r.method() + " " + r.target() + " path=" + r.path() + " query=" + r.rawQuery()
                    + " 1." + r.minorVersion() + " keepAlive=" + r.keepAlive() + " body=" + Arrays.hashCode(r.body()) + "/" + r.body().length;
                return new Outcome(Kind.PARSED, p.length, summary);
            } catch (HttpException e) {
                return new Outcome(Kind.ERROR, e.status(), null);
            }
        }
    }

    /**
     * The byte-level invariants: a documented outcome for the whole input, the same outcome when the
     * input sits inside larger buffers (bytes chosen to change the answer if the parser read them:
     * line ends, a last chunk, a copy of the input itself), and prefix consistency.
     */
    static void checkAnyInput(byte[] input) {
        Outcome whole = Outcome.of(input, 0, input.length);
        assertDocumented(whole, input.length, input);
        checkFramed(input, whole, new byte[0], latin1("\r\n\r\n0\r\n\r\n"));
        checkFramed(input, whole, latin1("\r\n\r\n"), input);
        checkFramed(input, whole, latin1("GET "), latin1("\n\u0000\u00ff 1;\r"));
        checkPrefixesConsistent(input, input.length <= ALL_PREFIXES_UP_TO ? allPrefixes(input) : sampledPrefixes(input));
    }

    private static void checkFramed(byte[] input, Outcome whole, byte[] before, byte[] after) {
        byte[] framed = concat(before, input, after);
        Outcome o = Outcome.of(framed, before.length, before.length + input.length);
        if (!whole.equals(o)) {
            fail("outcome depends on bytes outside [start, end): alone " + whole + ", between \"" + escape(before) + "\" and \""
                + escape(after) + "\" " + o + "; input \"" + escape(input) + "\"");
        }
    }

    static void assertDocumented(Outcome o, int available, byte[] input) {
        switch (o.kind()) {
            case PARSED -> assertTrue(o.lengthOrStatus() > 0 && o.lengthOrStatus() <= available,
                () -> "parsed length " + o.lengthOrStatus() + " outside (0, " + available + "]; input \"" + escape(input) + "\"");
            case ERROR -> assertTrue(DOCUMENTED_STATUSES.contains(o.lengthOrStatus()),
                () -> "undocumented status " + o.lengthOrStatus() + "; input \"" + escape(input) + "\"");
            case NEED_MORE -> { }
        }
    }

    /**
     * More bytes never undo an answer: once a prefix parses, every longer prefix parses to the same
     * request and length; once a prefix is an error, every longer prefix is the same error. So the
     * server's answer does not depend on how the client's bytes were split into reads. Each prefix is
     * also parsed by resuming a {@link RequestParser.Progress} fed the shorter prefixes before it.
     */
    static void checkPrefixesConsistent(byte[] b, TreeSet<Integer> lengths) {
        Outcome settled = null;
        int settledAt = -1;
        RequestParser.Progress progress = new RequestParser.Progress();
        for (int k : lengths) {
            Outcome o = Outcome.of(b, 0, k);
            assertDocumented(o, k, b);
            // The connection's way: one Progress fed ever longer prefixes, which it moves within its
            // buffer between reads. Resuming must answer exactly as parsing the prefix afresh.
            int shift = k % 3;
            Outcome resumed = Outcome.of(concat(latin1("\r\n\r".substring(0, shift)), Arrays.copyOf(b, k)), shift, shift + k, progress);
            if (!resumed.equals(o)) {
                fail("prefix of " + k + " bytes gave " + o + " afresh but " + resumed + " resumed; input \"" + escape(b) + "\"");
            }
            if (settled != null) {
                if (!settled.equals(o)) {
                    fail("prefix of " + settledAt + " bytes gave " + settled + " but prefix of " + k + " bytes gave " + o
                        + "; input \"" + escape(b) + "\"");
                }
            } else if (o.kind() != Outcome.Kind.NEED_MORE) {
                settled = o;
                settledAt = k;
            }
        }
    }

    /** A limit case: valid ones parse whole and their prefixes ask for more; others fail with {@code status}. */
    static void checkAtLimit(byte[] b, boolean valid, int status) {
        Outcome whole = Outcome.of(b, 0, b.length);
        if (valid) {
            assertEquals(Outcome.Kind.PARSED, whole.kind(), () -> "expected a request, got " + whole);
            assertEquals(b.length, whole.lengthOrStatus());
            for (int k : sampledPrefixes(b)) {
                if (k < b.length) assertEquals(Outcome.NEED_MORE, Outcome.of(b, 0, k), "prefix of " + k + " bytes");
            }
        } else {
            assertEquals(new Outcome(Outcome.Kind.ERROR, status, null), whole);
            checkPrefixesConsistent(b, sampledPrefixes(b));
        }
    }

    /** The status of the HttpException the whole of {@code b} must give. */
    static int errorStatus(byte[] b) {
        Outcome o = Outcome.of(b, 0, b.length);
        if (o.kind() != Outcome.Kind.ERROR) fail("expected an HttpException, got " + o + "; input \"" + escape(b) + "\"");
        return o.lengthOrStatus();
    }

    static TreeSet<Integer> allPrefixes(byte[] b) {
        TreeSet<Integer> all = new TreeSet<>();
        for (int k = 0; k <= b.length; k++) all.add(k);
        return all;
    }

    /** The start, the end, every line end give or take two bytes, and an even spread in between. */
    static TreeSet<Integer> sampledPrefixes(byte[] b) {
        TreeSet<Integer> ks = new TreeSet<>();
        for (int k = 0; k <= Math.min(64, b.length); k++) ks.add(k);
        for (int k = Math.max(0, b.length - 16); k <= b.length; k++) ks.add(k);
        for (int k = 0; k <= b.length; k += 1021) ks.add(k);
        for (int i = 0; i < b.length; i++) {
            if (b[i] == '\r' || b[i] == '\n') {
                for (int k = i - 2; k <= i + 2; k++) if (k >= 0 && k <= b.length) ks.add(k);
            }
        }
        return ks;
    }

    // ------------------------------------------------------------------------------------------
    // Bytes

    static byte[] latin1(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) out.writeBytes(p);
        return out.toByteArray();
    }

    /** Printable ASCII as is, CR and LF as \r and \n, other bytes as \xNN; long inputs cut at 2000 bytes. */
    static String escape(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < Math.min(b.length, 2000); i++) {
            int c = b[i] & 0xff;
            if (c == '\r') s.append("\\r");
            else if (c == '\n') s.append("\\n");
            else if (c == '\\') s.append("\\\\");
            else if (c == '"') s.append("\\\"");
            else if (c < 0x20 || c >= 0x7f) s.append(String.format("\\x%02x", c));
            else s.append((char) c);
        }
        if (b.length > 2000) s.append("...(").append(b.length).append(" bytes)");
        return s.toString();
    }
}

package kiln.http.spi;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import kiln.http.Http;
import kiln.http.HttpException;
import kiln.http.Limits;
import kiln.http.Paths;
import kiln.http.Response;
import kiln.http.Request;


/**
 * A strict HTTP/1.x request parser (RFC 9112). It parses one request from the bytes received so
 * far, or says that more bytes are needed, and a connection calls it again after each read; a
 * {@link Progress} carried between those calls lets it resume where it stopped, with the same
 * answers as parsing afresh. Anything malformed is an {@link HttpException} (400, 413, 414, 431, 501, 505), never a guess:
 * <ul>
 *   <li>request line {@code method SP request-target SP HTTP/x.y CRLF} (section 3), method a token,
 *       target origin-form ({@code /path?query}) or absolute-form ({@code http://host/path}) made of
 *       visible ASCII, or {@code *} with {@code OPTIONS} (asterisk-form, section 3.2.4); the path
 *       in its normal form ({@link Paths#normalize}: 400 for a malformed percent-encoding or a
 *       {@code ..} above the root); version {@code HTTP/1.0} or {@code HTTP/1.1}, HTTP-name
 *       case-sensitive (section 2.3); a later minor version ({@code HTTP/1.2}) is served as
 *       HTTP/1.1 (RFC 9110 section 2.5); another major version is 505;</li>
 *   <li>lines end in CRLF (a bare CR or LF is rejected: section 2.2 allows that);</li>
 *   <li>header fields {@code name ":" OWS value OWS} with a token name and no whitespace before the
 *       colon (section 5.1), no obsolete line folding (section 5.2), no control bytes in values;</li>
 *   <li>HTTP/1.1 requests carry exactly one Host, and a Host is {@code uri-host [":" port]} or empty
 *       (section 3.2, RFC 3986 section 3.2.2: 400 otherwise);</li>
 *   <li>body framing (section 6): Content-Length digits only and consistent; Transfer-Encoding
 *       never together with Content-Length (a request smuggling vector, section 6.3), never in
 *       HTTP/1.0, ending in {@code chunked} once (400 otherwise, section 6.3), and {@code chunked}
 *       alone (another coding before it: 501).</li>
 * </ul>
 * Limits (defaults): request line 8 KiB (414 when the target is what makes it long), header section
 * 16 KiB and 100 fields (431; the same for a chunked body's trailer section), body 64 KiB (413).
 */
public final class RequestParser {
    static final int MAX_REQUEST_LINE = Limits.MAX_REQUEST_LINE;
    static final int MAX_HEADER_BYTES = Limits.MAX_HEADER_BYTES;
    static final int MAX_HEADERS = Limits.MAX_HEADERS;
    static final int MAX_BODY = Limits.MAX_CONTENT;

    private static final byte CR = '\r';
    private static final byte LF = '\n';
    private static final byte[] NO_BODY = new byte[0];

    /** Result of one {@link #parse} call that found a whole request. */
    static final class Parsed {
        final Request request;
        /** Bytes of the input the request occupied (head and body). */
        final int length;

        Parsed(Request request, int length) {
            this.request = request;
            this.length = length;
        }
    }

    private RequestParser() {
    }

    /**
     * Where the parse of an unfinished request stopped, so that the parse after the next read resumes
     * there instead of starting over. Without it every read re-parses the whole request: a client
     * trickling a 136 KB chunked request one byte per read cost 17-25 s of CPU; resumed, the work is
     * proportional to the bytes received. Offsets are relative to the request's first byte, so the
     * connection may move the unfinished request within its buffer between reads. One per connection;
     * {@link #parse} resets it when it returns a request or throws.
     */
    static final class Progress {
        /** The most content bytes a request may have (413 beyond): the server's setting. */
        private final int maxBody;

        Progress() {
            this(MAX_BODY);
        }

        Progress(int maxBody) {
            this.maxBody = maxBody;
        }

        private static final int REQUEST_LINE = 0;
        private static final int FIELDS = 1;
        private static final int FIXED_BODY = 2;
        private static final int CHUNK_LINE = 3;
        private static final int CHUNK_DATA = 4;
        private static final int TRAILERS = 5;

        private int stage = REQUEST_LINE;
        /** The next byte to parse: the start of an unfinished line, or of the body data still awaited. */
        private int offset;
        /** Bytes from {@link #offset} already scanned for a line end without finding one. */
        private int scanned;
        private String method;
        private String target;
        private int minor;
        private List<String> headers;
        /** Where the header (or trailer) section began, for its size limit. */
        private int sectionStart;
        private int trailerFields;
        private boolean keepAlive;
        /** Content-Length, or the size of the chunk whose data is awaited. */
        private int length;
        private ByteArrayOutputStream chunks;
        /** The request asked {@code Expect: 100-continue} before sending its content (RFC 9110 section 10.1.1). */
        private boolean expectContinue;
        /** The fields that frame the request (RFC 9112 section 6), noted as the header section brings them ({@link #note}), for {@link RequestParser#frame}. */
        private int hosts;
        private String host;
        private String contentLength;
        private boolean contentLengthsDiffer;
        private String transferEncoding;
        private String connection;
        private String expect;

        /** Notes a header field {@code f} with {@code value}, when it is one that frames the request. */
        private void note(Field f, String value) {
            switch (f) {
                case HOST -> {
                    hosts++;
                    host = value;
                }
                case CONTENT_LENGTH -> {
                    if (contentLength != null && !contentLength.equals(value)) contentLengthsDiffer = true;
                    contentLength = value;
                }
                case TRANSFER_ENCODING -> transferEncoding = transferEncoding == null ? value : transferEncoding + "," + value;
                case CONNECTION -> connection = connection == null ? value : connection + "," + value;
                case EXPECT -> expect = value;
                default -> {
                }
            }
        }

        /**
         * @return true once, when the request's head is in, it asked {@code Expect: 100-continue} and
         *         its content is awaited: the server will read it, so it sends {@code 100 Continue}
         *         now (RFC 9110 section 10.1.1) instead of letting the client wait. A request refused
         *         by its head (413 for a Content-Length over the limit) gets its final status instead.
         */
        boolean takeContinue() {
            if (!expectContinue || stage < FIXED_BODY) return false;
            expectContinue = false;
            return true;
        }

        /** @return true when the request being parsed is a HEAD (its request line is in): its refusal gets no body */
        boolean isHead() {
            return "HEAD".equals(method);
        }

        /** @return true once the request's head is in and its content is awaited (the minimum data rate applies) */
        boolean inContent() {
            return stage >= FIXED_BODY;
        }

        /** @return the bytes of chunked content copied out of the input so far (the request's own array once it is whole) */
        int copiedContent() {
            return chunks == null ? 0 : chunks.size();
        }

        /** Set when the request just refused was a HEAD (its request line was in): its refusal gets no body. */
        private boolean refusedHead;

        /** @return whether the request the last {@link HttpException} refused was a HEAD */
        boolean refusedHead() {
            return refusedHead;
        }

        void reset() {
            expectContinue = false;
            refusedHead = false;
            stage = REQUEST_LINE;
            offset = 0;
            scanned = 0;
            method = null;
            target = null;
            headers = null;
            trailerFields = 0;
            chunks = null;
            hosts = 0;
            host = null;
            contentLength = null;
            contentLengthsDiffer = false;
            transferEncoding = null;
            connection = null;
            expect = null;
        }
    }

    /**
     * Parses one request from {@code buf[start..end)}, from the beginning.
     *
     * @return the request and its length, or null when the bytes so far are a valid prefix of a
     *         request and more are needed
     * @throws HttpException when the bytes cannot start a valid request, or break a limit
     */
    static Parsed parse(byte[] buf, int start, int end) {
        return parse(buf, start, end, new Progress());
    }

    /**
     * Parses one request from {@code buf[start..end)}, resuming where {@code progress} stopped on the
     * same request's shorter prefix: same answers as {@link #parse(byte[], int, int)}, less work.
     */
    static Parsed parse(byte[] buf, int start, int end, Progress progress) {
        try {
            Parsed parsed = resume(buf, start, end, progress);
            if (parsed != null) progress.reset();
            return parsed;
        } catch (HttpException e) {
            boolean head = "HEAD".equals(progress.method);
            progress.reset();
            progress.refusedHead = head;
            throw e;
        }
    }

    /** Runs the stages from where {@code p} stopped until one needs more bytes (null) or the request is whole. */
    private static Parsed resume(byte[] buf, int messageStart, int end, Progress p) {
        if (p.stage == Progress.REQUEST_LINE && !requestLine(buf, messageStart, end, p)) return null;
        if (p.stage == Progress.FIELDS) {
            if (!headerFields(buf, messageStart, end, p)) return null;
            frame(p);
            if (p.stage == Progress.FIELDS) return finish(p, NO_BODY, p.offset);
        }
        if (p.stage == Progress.FIXED_BODY) return fixedBody(buf, messageStart, end, p);
        return chunkedBody(buf, messageStart, end, p);
    }

    /** Stage 1: the request line (RFC 9112 section 3). @return false when more bytes are needed */
    private static boolean requestLine(byte[] buf, int messageStart, int end, Progress p) {
        int start = messageStart;
        // RFC 9112 section 2.2: ignore empty lines before the request line (a few, not unbounded).
        for (int skipped = 0; skipped < 4 && end - start >= 2 && buf[start] == CR && buf[start + 1] == LF; skipped++) {
            start += 2;
        }
        // A lone CR may be the first half of one more empty line: wait for the next byte.
        if (end - start == 1 && buf[start] == CR) return false;
        int lineEnd = findLineEnd(buf, start, end, MAX_REQUEST_LINE);
        if (lineEnd < 0) {
            checkPrefix(buf, start, end);
            if (lineEnd == TOO_LONG) {
                throw new HttpException(looksLikeLongTarget(buf, start, end) ? 414 : 400, "request line longer than " + MAX_REQUEST_LINE + " bytes");
            }
            return false;
        }
        parseRequestLine(buf, start, lineEnd, p);
        p.headers = new ArrayList<>(16);
        p.stage = Progress.FIELDS;
        advanceLine(p, lineEnd + 2 - messageStart);
        p.sectionStart = p.offset;
        return true;
    }

    /** Stage 2: header fields up to the empty line (RFC 9112 section 5). @return false when more bytes are needed */
    private static boolean headerFields(byte[] buf, int messageStart, int end, Progress p) {
        while (true) {
            int pos = messageStart + p.offset;
            int eol = findSectionLine(buf, pos, end, messageStart + p.sectionStart, p);
            if (eol == INCOMPLETE) return false;
            if (eol == TOO_LONG) throw new HttpException(431, "header section larger than " + MAX_HEADER_BYTES + " bytes");
            advanceLine(p, eol + 2 - messageStart);
            if (eol == pos) return true;
            if (p.headers.size() / 2 >= MAX_HEADERS) throw new HttpException(431, "more than " + MAX_HEADERS + " header fields");
            Field field = parseField(buf, pos, eol, p.headers);
            if (field != null) p.note(field, p.headers.get(p.headers.size() - 1));
        }
    }

    /** Stage 3a: a body of Content-Length bytes (RFC 9112 section 6.2). */
    private static Parsed fixedBody(byte[] buf, int messageStart, int end, Progress p) {
        int pos = messageStart + p.offset;
        if (end - pos < p.length) return null;
        byte[] body = new byte[p.length];
        System.arraycopy(buf, pos, body, 0, p.length);
        return finish(p, body, p.offset + p.length);
    }

    /** Stage 3b: a chunked body and its trailer section (RFC 9112 section 7.1). */
    private static Parsed chunkedBody(byte[] buf, int messageStart, int end, Progress p) {
        while (true) {
            int pos = messageStart + p.offset;
            if (p.stage == Progress.CHUNK_LINE) {
                if (!chunkLine(buf, messageStart, pos, end, p)) return null;
            } else if (p.stage == Progress.CHUNK_DATA) {
                if (end - pos < p.length + 2) return null;
                p.chunks.write(buf, pos, p.length);
                if (buf[pos + p.length] != CR || buf[pos + p.length + 1] != LF) throw new HttpException(400, "chunk data not followed by CRLF");
                p.offset += p.length + 2;
                p.stage = Progress.CHUNK_LINE;
            } else {
                // trailer section: header lines until an empty line, held to the header section's limits
                int eol = findSectionLine(buf, pos, end, messageStart + p.sectionStart, p);
                if (eol == INCOMPLETE) return null;
                if (eol == TOO_LONG) throw new HttpException(431, "trailer section larger than " + MAX_HEADER_BYTES + " bytes");
                advanceLine(p, eol + 2 - messageStart);
                if (eol == pos) return finish(p, p.chunks.toByteArray(), p.offset);
                if (p.trailerFields++ == MAX_HEADERS) throw new HttpException(431, "more than " + MAX_HEADERS + " trailer fields");
                parseField(buf, pos, eol, new ArrayList<>(2));
            }
        }
    }

    /** A chunk-size line with its extensions. @return false when more bytes are needed */
    private static boolean chunkLine(byte[] buf, int messageStart, int pos, int end, Progress p) {
        int eol = findLineEnd(buf, pos, pos + p.scanned, end, 1024);
        if (eol == TOO_LONG) throw new HttpException(400, "chunk-size line too long");
        if (eol < 0) {
            p.scanned = scannedWithoutLineEnd(buf, pos, end);
            return false;
        }
        long size = 0;
        int sizeEnd = pos;
        for (int d; sizeEnd < eol && (d = Character.digit(buf[sizeEnd], 16)) >= 0; sizeEnd++) {
            size = size * 16 + d;
            if (p.chunks.size() + size > p.maxBody) throw new HttpException(413, "chunked body exceeds " + p.maxBody + " bytes");
        }
        if (sizeEnd == pos) throw new HttpException(400, "invalid chunk size");
        checkChunkExtensions(buf, sizeEnd, eol);
        advanceLine(p, eol + 2 - messageStart);
        p.length = (int) size;
        p.stage = size == 0 ? Progress.TRAILERS : Progress.CHUNK_DATA;
        p.sectionStart = p.offset;
        return true;
    }

    /** Method, target and version from the request line {@code buf[start..lineEnd)}. */
    private static void parseRequestLine(byte[] buf, int start, int lineEnd, Progress p) {
        int sp1 = indexOf(buf, start, lineEnd, (byte) ' ');
        if (sp1 <= start) throw new HttpException(400, "malformed request line: no method");
        for (int i = start; i < sp1; i++) {
            if (!isToken(buf[i])) throw new HttpException(400, "malformed request line: bad character in method");
        }
        int sp2 = indexOf(buf, sp1 + 1, lineEnd, (byte) ' ');
        if (sp2 < 0 || sp2 == sp1 + 1) throw new HttpException(400, "malformed request line: expected METHOD SP TARGET SP VERSION");
        for (int i = sp1 + 1; i < sp2; i++) {
            if (buf[i] <= 0x20 || buf[i] >= 0x7f) throw new HttpException(400, "malformed request target: control, space or non-ASCII byte");
        }
        p.method = ascii(buf, start, sp1);  // first: a refused version still answers a HEAD without a body
        p.minor = parseVersion(buf, sp2 + 1, lineEnd);
        p.target = ascii(buf, sp1 + 1, sp2);
    }

    /**
     * Body framing from the complete header section (RFC 9112 section 6): sets the stage to the body
     * to await, or leaves it at FIELDS when the request has no body.
     */
    private static void frame(Progress p) {
        if (p.contentLengthsDiffer) throw new HttpException(400, "conflicting Content-Length headers");
        if (p.hosts > 1) throw new HttpException(400, "more than one Host header");
        if (p.hosts == 1 && !validHost(p.host)) throw new HttpException(400, "invalid Host header (RFC 9112 section 3.2): " + p.host);
        if (p.minor == 1 && p.hosts == 0) throw new HttpException(400, "HTTP/1.1 request without Host header (RFC 9112 section 3.2)");
        p.keepAlive = p.minor == 1 ? !hasToken(p.connection, "close") : hasToken(p.connection, "keep-alive") && !hasToken(p.connection, "close");

        if (p.transferEncoding != null) {
            if (p.contentLength != null) throw new HttpException(400, "both Transfer-Encoding and Content-Length (RFC 9112 section 6.3)");
            if (p.minor == 0) throw new HttpException(400, "Transfer-Encoding in an HTTP/1.0 request");
            checkTransferCodings(p.transferEncoding);
            p.stage = Progress.CHUNK_LINE;
            p.chunks = new ByteArrayOutputStream();
        } else if (p.contentLength != null) {
            long n = parseContentLength(p.contentLength);
            if (n > p.maxBody) throw new HttpException(413, "request body of " + n + " bytes exceeds " + p.maxBody);
            if (n > 0) {
                p.stage = Progress.FIXED_BODY;
                p.length = (int) n;
            }
        }
        // HTTP/1.0 clients cannot handle 1xx (RFC 9110 section 10.1.1); other expectations are ignored.
        p.expectContinue = p.minor == 1 && p.expect != null && p.expect.trim().equalsIgnoreCase("100-continue");
    }

    private static Parsed finish(Progress p, byte[] body, int length) {
        String target = p.target;
        int q = target.indexOf('?');
        String pathAndQuery = target;
        if (!target.startsWith("/")) {
            pathAndQuery = absoluteFormPath(target, p.method);
            q = pathAndQuery.indexOf('?');
        }
        String path = Paths.normalize(q < 0 ? pathAndQuery : pathAndQuery.substring(0, q));
        String rawQuery = q < 0 ? null : pathAndQuery.substring(q + 1);
        return new Parsed(Request.parsed(p.method, target, path, rawQuery, p.minor, p.headers, body, p.keepAlive), length);
    }

    /** Moves past a complete line: the next one starts unscanned at {@code offset}. */
    private static void advanceLine(Progress p, int offset) {
        p.offset = offset;
        p.scanned = 0;
    }

    /**
     * The end of the header or trailer line at {@code pos}, within the section's {@link #MAX_HEADER_BYTES}
     * counted from {@code sectionStart}; records how far an unfinished line was scanned.
     */
    private static int findSectionLine(byte[] buf, int pos, int end, int sectionStart, Progress p) {
        int budget = Math.max(0, MAX_HEADER_BYTES - (pos - sectionStart));
        int eol = findLineEnd(buf, pos, pos + p.scanned, end, budget);
        if (eol == INCOMPLETE) p.scanned = scannedWithoutLineEnd(buf, pos, end);
        return eol;
    }

    /** How many bytes from {@code pos} hold no line end: all but a last CR, whose LF may be next. */
    private static int scannedWithoutLineEnd(byte[] buf, int pos, int end) {
        return end > pos && buf[end - 1] == CR ? end - 1 - pos : end - pos;
    }

    private static final int INCOMPLETE = -1;
    private static final int TOO_LONG = -2;

    /** @return index of the CR of the first CRLF in [from, end), INCOMPLETE, or TOO_LONG if none within max bytes */
    private static int findLineEnd(byte[] buf, int from, int end, int max) {
        return findLineEnd(buf, from, from, end, max);
    }

    /** As above, for a line whose bytes {@code [from, scanFrom)} are known to hold no CR or LF. */
    private static int findLineEnd(byte[] buf, int from, int scanFrom, int end, int max) {
        int limit = Math.min(end, from + max + 1);
        for (int i = scanFrom; i < limit; i++) {
            byte b = buf[i];
            if (b == CR) {
                if (i + 1 >= end) return INCOMPLETE;
                if (buf[i + 1] != LF) throw new HttpException(400, "bare CR in request head");
                return i;
            }
            if (b == LF) throw new HttpException(400, "bare LF in request head: lines must end in CRLF");
        }
        return end - from > max ? TOO_LONG : INCOMPLETE;
    }

    /** Rejects an incomplete request line early when what has arrived can already not be valid. */
    private static void checkPrefix(byte[] buf, int start, int end) {
        for (int i = start; i < end; i++) {
            byte b = buf[i];
            if (b == ' ') {
                if (i == start) throw new HttpException(400, "malformed request line: no method");
                return;
            }
            if (!isToken(b)) throw new HttpException(400, "malformed request line: bad character in method");
        }
    }

    private static boolean looksLikeLongTarget(byte[] buf, int start, int end) {
        int sp = indexOf(buf, start, Math.min(end, start + 32), (byte) ' ');
        return sp > start;
    }

    private static int parseVersion(byte[] buf, int from, int to) {
        if (to - from != 8 || buf[from] != 'H' || buf[from + 1] != 'T' || buf[from + 2] != 'T' || buf[from + 3] != 'P'
            || buf[from + 4] != '/' || !isDigit(buf[from + 5]) || buf[from + 6] != '.' || !isDigit(buf[from + 7])) {
            throw new HttpException(400, "malformed HTTP version");
        }
        if (buf[from + 5] != '1') {
            throw new HttpException(505, "HTTP version " + ascii(buf, from + 5, to) + " not supported; use HTTP/1.1");
        }
        // RFC 9110 section 2.5: a later minor version of a major version we implement is read as the
        // highest minor version we implement
        return buf[from + 7] == '0' ? 0 : 1;
    }

    /**
     * Transfer-Encoding's codings, in the order applied (RFC 9112 section 6.1): the last must be
     * {@code chunked} (else the body's length cannot be known: 400, section 6.3), applied once (400),
     * and no other coding is supported (501).
     */
    static void checkTransferCodings(String transferEncoding) {
        java.util.List<String> codings = new java.util.ArrayList<>();
        for (String c : transferEncoding.split(",")) {
            String coding = c.trim();
            if (!coding.isEmpty()) codings.add(coding.toLowerCase(java.util.Locale.ROOT));  // empty list elements are ignored
        }
        if (codings.isEmpty() || !codings.get(codings.size() - 1).equals("chunked")) {
            throw new HttpException(400, "Transfer-Encoding must end in chunked (RFC 9112 section 6.3): " + transferEncoding);
        }
        if (codings.indexOf("chunked") != codings.size() - 1) {
            throw new HttpException(400, "chunked applied more than once (RFC 9112 section 6.1): " + transferEncoding);
        }
        if (codings.size() > 1) throw new HttpException(501, "unsupported Transfer-Encoding: " + transferEncoding);
    }

    /**
     * The Host field's value is {@code uri-host [":" port]} (RFC 9112 section 3.2, RFC 3986 section
     * 3.2.2) or empty: a reg-name or IPv4 address (unreserved, sub-delims, percent-encodings), or an
     * IP literal in brackets, then an optional port of digits.
     *
     * @return whether {@code host}, a Host field's value, is that
     */
    static boolean validHost(String host) {
        int end = host.length();
        int colon = host.lastIndexOf(':');
        int i = 0;
        if (host.startsWith("[")) {
            int close = host.indexOf(']');
            if (close < 0) return false;
            for (int j = 1; j < close; j++) {
                char c = host.charAt(j);
                if (!(Character.digit(c, 16) >= 0 || c == ':' || c == '.')) return false;
            }
            if (close == 1) return false;
            i = close + 1;
            if (i < end && host.charAt(i) != ':') return false;
        } else {
            int hostEnd = colon < 0 ? end : colon;
            for (; i < hostEnd; i++) {
                char c = host.charAt(i);
                if (c == '%') {
                    if (i + 2 >= hostEnd || Character.digit(host.charAt(i + 1), 16) < 0 || Character.digit(host.charAt(i + 2), 16) < 0) return false;
                    i += 2;
                } else if (!Http.isRegNameChar(c)) {
                    return false;
                }
            }
        }
        if (i < end) {  // ":" port
            for (int j = i + 1; j < end; j++) {
                if (host.charAt(j) < '0' || host.charAt(j) > '9') return false;
            }
        }
        return true;
    }

    /**
     * Adds the field on the line {@code buf[from..to)} to {@code headers}, name then value.
     *
     * @return the field when its name is a {@link Field}'s (in any case), else null
     */
    private static Field parseField(byte[] buf, int from, int to, List<String> headers) {
        if (buf[from] == ' ' || buf[from] == '\t') throw new HttpException(400, "obsolete line folding in header section");
        int colon = -1;
        for (int i = from; i < to; i++) {
            byte b = buf[i];
            if (b == ':') {
                colon = i;
                break;
            }
            if (!isToken(b)) throw new HttpException(400, b == ' ' || b == '\t'
                ? "whitespace between header name and colon" : "bad character in header name");
        }
        if (colon < 0) throw new HttpException(400, "header line without a colon");
        if (colon == from) throw new HttpException(400, "empty header name");
        int vs = colon + 1;
        int ve = to;
        while (vs < ve && (buf[vs] == ' ' || buf[vs] == '\t')) vs++;
        while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t')) ve--;
        for (int i = vs; i < ve; i++) {
            int b = buf[i] & 0xff;
            if ((b < 0x20 && b != '\t') || b == 0x7f) throw new HttpException(400, "control byte in header value");
        }
        Field field = Field.named(buf, from, colon);
        headers.add(field == null ? ascii(buf, from, colon) : field.spelledAs(buf, from));
        headers.add(new String(buf, vs, ve - vs, StandardCharsets.ISO_8859_1));
        return field;
    }

    /**
     * Field names that nearly every request carries. A name received in one of its two usual
     * spellings, as its specification writes it ({@code Content-Length}) or in lowercase
     * ({@code content-length}, as HTTP/2-minded clients and proxies send it), is one shared String
     * rather than a new one per request; any other spelling ({@code CONTENT-length}) is kept as
     * received. The first five
     * frame a request ({@link Progress#note}): they are known here, from the name's bytes in any
     * case, rather than by comparing every name with each of them once the section is in.
     */
    private enum Field {
        HOST("Host"), CONTENT_LENGTH("Content-Length"), TRANSFER_ENCODING("Transfer-Encoding"), CONNECTION("Connection"),
        EXPECT("Expect"),
        USER_AGENT("User-Agent"), ACCEPT("Accept"), ACCEPT_ENCODING("Accept-Encoding"), ACCEPT_LANGUAGE("Accept-Language"),
        CONTENT_TYPE("Content-Type"), COOKIE("Cookie"), REFERER("Referer"), ORIGIN("Origin"), AUTHORIZATION("Authorization"),
        CACHE_CONTROL("Cache-Control"), PRAGMA("Pragma"), IF_NONE_MATCH("If-None-Match"), IF_MODIFIED_SINCE("If-Modified-Since"),
        UPGRADE("Upgrade"), X_FORWARDED_FOR("X-Forwarded-For"), X_FORWARDED_PROTO("X-Forwarded-Proto"), X_REAL_IP("X-Real-IP"),
        LAST_EVENT_ID("Last-Event-ID");

        /** The fields by the length of their names: the few to compare a received name with. */
        private static final Field[][] BY_LENGTH = byLength();

        private final String usual;
        private final String lowercase;
        private final byte[] nameBytes;
        private final byte[] lowercaseBytes;

        Field(String name) {
            this.usual = name;
            this.lowercase = name.toLowerCase(Locale.ROOT);
            this.nameBytes = name.getBytes(StandardCharsets.US_ASCII);
            this.lowercaseBytes = lowercase.getBytes(StandardCharsets.US_ASCII);
        }

        /** @return the field named {@code buf[from..to)} in any case, a token's bytes, or null */
        static Field named(byte[] buf, int from, int to) {
            int length = to - from;
            if (length >= BY_LENGTH.length) return null;
            for (Field f : BY_LENGTH[length]) {
                if (f.isNamedIgnoringCase(buf, from)) return f;
            }
            return null;
        }

        /**
         * @return this field's shared name when {@code buf} spells it one of the two usual ways at
         *         {@code from}, else the name as received. One loop over the name's few bytes for
         *         both spellings: two {@code Arrays.equals} took 6 % of a {@code /hello} request's
         *         user time (their range checks and calls, for names of 4 to 17 bytes).
         */
        String spelledAs(byte[] buf, int from) {
            boolean asUsual = true;
            boolean asLowercase = true;
            for (int i = 0; i < nameBytes.length; i++) {
                byte b = buf[from + i];
                asUsual &= b == nameBytes[i];
                asLowercase &= b == lowercaseBytes[i];
            }
            if (asUsual) return usual;
            if (asLowercase) return lowercase;
            return ascii(buf, from, from + nameBytes.length);
        }

        /**
         * Compares {@code b | 0x20} with the lowercase name: among the bytes of a token (as a name's are,
         * checked before), that is a lowercase letter only for the letter in either case, and
         * {@code '-'} only for {@code '-'}: the only bytes these names hold.
         */
        private boolean isNamedIgnoringCase(byte[] buf, int from) {
            for (int i = 0; i < lowercaseBytes.length; i++) {
                if ((buf[from + i] | 0x20) != lowercaseBytes[i]) return false;
            }
            return true;
        }

        private static Field[][] byLength() {
            int longest = 0;
            for (Field f : values()) longest = Math.max(longest, f.usual.length());
            Field[][] byLength = new Field[longest + 1][];
            for (int n = 0; n <= longest; n++) {
                int length = n;
                byLength[n] = Arrays.stream(values()).filter(f -> f.usual.length() == length).toArray(Field[]::new);
            }
            return byLength;
        }
    }

    private static long parseContentLength(String value) {
        if (value.isEmpty() || value.length() > 18) throw new HttpException(400, "invalid Content-Length: " + value);
        long n = 0;
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < '0' || c > '9') throw new HttpException(400, "invalid Content-Length: " + value);
            n = n * 10 + (c - '0');
        }
        return n;
    }

    /** Path and query of an absolute-form target (RFC 9112 section 3.2.2), e.g. http://h:80/p?q. */
    private static String absoluteFormPath(String target, String method) {
        if ("*".equals(target)) {
            if ("OPTIONS".equals(method)) return "*";
            throw new HttpException(400, "asterisk-form target is only valid with OPTIONS");
        }
        String lower = target.toLowerCase(java.util.Locale.ROOT);
        int scheme = lower.startsWith("http://") ? 7 : lower.startsWith("https://") ? 8 : -1;
        if (scheme < 0) throw new HttpException(400, "request target must start with '/' or be an absolute http URI");
        int slash = target.indexOf('/', scheme);
        int qm = target.indexOf('?', scheme);
        if (slash < 0 || (qm >= 0 && qm < slash)) return qm < 0 ? "/" : "/" + target.substring(qm);
        return target.substring(slash);
    }

    static boolean hasToken(String list, String token) {
        if (list == null) return false;
        int i = 0;
        int n = list.length();
        while (i < n) {
            int comma = list.indexOf(',', i);
            if (comma < 0) comma = n;
            int s = i;
            int e = comma;
            while (s < e && (list.charAt(s) == ' ' || list.charAt(s) == '\t')) s++;
            while (e > s && (list.charAt(e - 1) == ' ' || list.charAt(e - 1) == '\t')) e--;
            if (e - s == token.length() && list.regionMatches(true, s, token, 0, token.length())) return true;
            i = comma + 1;
        }
        return false;
    }

    static boolean isToken(byte b) {
        return Http.isTokenChar(b);
    }

    private static boolean isDigit(byte b) {
        return b >= '0' && b <= '9';
    }

    private static int indexOf(byte[] buf, int from, int to, byte b) {
        for (int i = from; i < to; i++) {
            if (buf[i] == b) return i;
        }
        return -1;
    }

    private static String ascii(byte[] buf, int from, int to) {
        return new String(buf, from, to - from, StandardCharsets.ISO_8859_1);
    }

    /**
     * Checks what follows the chunk size on its line against
     * {@code chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )}, where a
     * name is a token and a value a token or quoted-string (RFC 9112 section 7.1.1). Extensions
     * are checked and ignored: kiln defines none.
     */
    private static void checkChunkExtensions(byte[] buf, int from, int eol) {
        int i = from;
        while (i < eol) {
            i = skipBws(buf, i, eol);
            if (i == eol || buf[i] != ';') throw new HttpException(400, "invalid chunk size or extension");
            i = skipToken(buf, skipBws(buf, i + 1, eol), eol, "chunk extension name");
            int eq = skipBws(buf, i, eol);
            if (eq < eol && buf[eq] == '=') {
                int v = skipBws(buf, eq + 1, eol);
                i = v < eol && buf[v] == '"' ? skipQuotedString(buf, v, eol) : skipToken(buf, v, eol, "chunk extension value");
            }
        }
    }

    private static int skipBws(byte[] buf, int i, int end) {
        while (i < end && (buf[i] == ' ' || buf[i] == '\t')) i++;
        return i;
    }

    private static int skipToken(byte[] buf, int i, int end, String what) {
        int start = i;
        while (i < end && isToken(buf[i])) i++;
        if (i == start) throw new HttpException(400, "invalid " + what);
        return i;
    }

    /** quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE (RFC 9110 section 5.6.4); i is at the opening quote. */
    private static int skipQuotedString(byte[] buf, int i, int end) {
        for (i++; i < end; i++) {
            int b = buf[i] & 0xff;
            if (b == '"') return i + 1;
            if (b == '\\') {
                if (++i == end) break;
                b = buf[i] & 0xff;
                if (b != '\t' && (b < 0x20 || b == 0x7f)) break;
            } else if (b != '\t' && (b < 0x20 || b == 0x7f)) {
                break;
            }
        }
        throw new HttpException(400, "invalid quoted chunk extension value");
    }

    /**
     * The checks a server library does not apply itself, for front ends whose library parses
     * requests, as kiln's own parser does: a Host that is no {@code uri-host [":" port]} is 400 (RFC
     * 9112 section 3.2); a Transfer-Encoding that does not end in {@code chunked}, once, is 400 (the
     * body's length cannot be known: section 6.3); more than {@link Limits#MAX_HEADERS} header fields
     * is 431 (RFC 6585 section 5); content is never read, so a request declaring more than
     * {@code maxContent} bytes, or chunked content (whose framing cannot be checked without
     * reading it), is 413 (RFC 9110 section 15.5.14). Checked before any endpoint runs. Send the
     * refusal with {@code Connection: close}: unread content must not be taken for a request; to a
     * HEAD, its head only.
     *
     * @param headerCount      how many header fields the request has
     * @param contentLength    the request's Content-Length, or -1 when it has none
     * @param transferEncoding the request's Transfer-Encoding (its field lines joined by ","), or null
     * @param host             the request's Host, or null when it has none
     * @param maxContent       the most content bytes accepted (the server's {@code --max-content})
     * @return the refusal to send and close, or null to serve the request
     */
    public static Response refuseRequest(int headerCount, long contentLength, String transferEncoding, String host, int maxContent) {
        if (host != null && !validHost(host)) {
            return Response.error(400, "invalid Host header (RFC 9112 section 3.2): " + host);
        }
        if (headerCount > Limits.MAX_HEADERS) {
            return Response.error(431, headerCount + " header fields; at most " + Limits.MAX_HEADERS + " accepted");
        }
        if (transferEncoding != null) {
            try {
                checkTransferCodings(transferEncoding);
            } catch (HttpException e) {
                if (e.status() == 400) return Response.error(400, e.getMessage());
            }
            return Response.error(413, "chunked request content is not accepted; the endpoints take no content");
        }
        if (contentLength > maxContent) {
            return Response.error(413, "request content of " + contentLength + " bytes; at most " + maxContent + " accepted");
        }
        return null;
    }
}

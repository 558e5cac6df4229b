import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The fan-out benchmark's client (./ab-sweep.sh --subscribers): one process holding many server-sent-event
 * subscribers, each a {@code GET /updates/events} stream, all on one NIO selector thread. It speaks exactly
 * what sweep/kiln_sweep/subscribers.py (the asyncio + aiohttp client it replaces as the default) speaks, so
 * kiln_sweep.fanout starts either:
 *
 * <pre>
 *   java -cp DIR FanoutClient --port P --count N --result FILE [--host H] [--path P] [--in-flight K]
 *        [--connect-timeout S] [--deadline S] [--no-stdin]
 * </pre>
 *
 * Stdout, one JSON object per line: {"event": "connected", ...} once every subscriber has its stream or the
 * connect phase timed out; {"event": "progress", ...} every 0.25 s; {"event": "done"} once FILE holds the
 * result (the same keys as subscribers.py's, written to FILE.tmp and renamed). A line "from ID" on stdin
 * restarts the measurement after event ID; "stop" or the end of stdin (once the connect phase is over), SIGTERM,
 * SIGINT or --deadline stop it.
 *
 * <p>Per stream it counts update events, gaps in their ids after the first one it counted, duplicates,
 * {@code event: reload}, other events, events without a readable id or committedAt, and whether the server
 * ended it. An event's latency is the wall clock (microseconds) when this process read the bytes that
 * completed it, minus its "committedAt", in a histogram of 0.1 ms buckets up to 60 s (exact maximum aside).
 *
 * <p>What it costs: raw bytes only. One shared read buffer; the chunked transfer coding is taken off in
 * place; complete events are parsed where they lie in that buffer (find the blank line, compare the
 * {@code id:} and {@code event:} prefixes, find {@code "committedAt":}, read two decimal numbers); only the
 * incomplete end of a read is copied into the stream's own small carry array (allocated on first need,
 * 256 bytes, grown only for an event that big). No JSON parsing, no object per event or per read: the wall
 * clock is read once per read. A stream's memory is its Stream object, its carry array if it ever needed
 * one, and the JDK's SocketChannel and SelectionKey; what a slow client has not read yet stays in the
 * kernel's socket buffer (at most READ_BYTES are read per stream per select round, which keeps the
 * streams fair and the heap flat).
 */
public final class FanoutClient {
    static final int BUCKET_US = 100;
    static final int BUCKETS = 600_000;
    /** Bytes read from one stream per select round, into the one shared buffer. */
    static final int READ_BYTES = 16384;
    static final long PROGRESS_NS = 250_000_000L;
    /** A response head or one event larger than this is an error (the stream is dropped). */
    static final int MAX_HEAD = 16384;
    static final int MAX_EVENT = 1 << 20;

    static final byte[] MARKER = ascii("\"committedAt\":");
    static final byte[] ID = ascii("id:");
    static final byte[] EVENT = ascii("event:");
    static final byte[] NL_EVENT = ascii("\nevent:");
    static final byte[] EVENT_UPDATE = ascii("event: update");
    static final byte[] EVENT_RELOAD = ascii("event: reload");
    static final byte[] END_OF_HEAD = ascii("\r\n\r\n");

    // A stream's state while its bytes are taken apart.
    static final int CONNECTING = 0, HEAD = 1, SIZE = 2, SIZE_EXT = 3, DATA = 4, DATA_END = 5, RAW = 6, CLOSED = 7;

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** One subscriber. */
    static final class Stream {
        SocketChannel ch;
        SelectionKey key;
        int state = CONNECTING;
        boolean held, settled, gotBody;
        long remaining;             // bytes left in the current chunk
        long size;                  // the chunk-size line being read
        int sizeDigits;
        byte[] head;                // the response head while it arrives
        int headLen;
        byte[] carry;               // an incomplete event
        int carryLen;
        long first, last, gaps;     // ids: the first and last counted, ids skipped in between
        int events;
    }

    // What the process saw, over all its subscribers (subscribers.py's Stats).
    final int count;
    int held;
    final Map<String, Integer> connectErrors = new LinkedHashMap<>();
    final Map<String, Integer> endErrors = new LinkedHashMap<>();
    final int[] hist = new int[BUCKETS];
    long received, chunks, bytes, negative, maxUs = -1, duplicates, reloads, otherEvents, malformed, ended;
    long skipUntil;

    final String host, path;
    final int port, inFlightMax;
    final double connectTimeoutS, deadlineS;
    final Path result;
    final Stream[] streams;
    final Selector selector;
    final byte[] request;
    final ByteBuffer rbuf = ByteBuffer.allocateDirect(READ_BYTES);
    final byte[] raw = new byte[READ_BYTES];
    final InetSocketAddress address;
    final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
                                            StandardCharsets.UTF_8);
    final ConcurrentLinkedQueue<Long> restarts = new ConcurrentLinkedQueue<>();
    volatile boolean stopRequested, terminated;
    boolean stopping, connectedSent, connectOver, starting;
    int started, inFlight, pending;
    long nextProgress;

    FanoutClient(String host, int port, String path, int count, int inFlight, double connectTimeoutS,
                 double deadlineS, Path result) throws IOException {
        this.host = host;
        this.port = port;
        this.path = path;
        this.count = count;
        this.inFlightMax = Math.max(1, inFlight);
        this.connectTimeoutS = connectTimeoutS;
        this.deadlineS = deadlineS;
        this.result = result;
        this.streams = new Stream[count];
        this.pending = count;
        this.selector = Selector.open();
        this.address = new InetSocketAddress(host, port);
        this.request = ascii("GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + port
                             + "\r\nAccept: text/event-stream\r\nUser-Agent: kiln-fanout-client\r\n\r\n");
    }

    // ---------------------------------------------------------------------------------------------
    // The loop
    // ---------------------------------------------------------------------------------------------
    void run() throws IOException {
        long start = System.nanoTime();
        long end = start + (long) (deadlineS * 1e9);
        long connectEnd = start + (long) (Math.min(connectTimeoutS, deadlineS) * 1e9);
        startMore();
        if (pending == 0) {
            connected();
        }
        while (true) {
            long now = System.nanoTime();
            // "stop" counts once the connect phase is over (as in subscribers.py); SIGTERM and SIGINT at once.
            if ((stopRequested && connectedSent) || terminated || now - end >= 0) {
                break;
            }
            if (!connectedSent && now - connectEnd >= 0) {
                giveUp();
            }
            Long from;
            while ((from = restarts.poll()) != null) {
                restart(from);
            }
            if (connectedSent && now - nextProgress >= 0) {
                nextProgress += PROGRESS_NS;
                if (nextProgress - now <= 0) {
                    nextProgress = now + PROGRESS_NS;
                }
                progress();
            }
            long until = Math.min(end, connectedSent ? nextProgress : connectEnd);
            long waitMs = Math.max(1, (until - now + 999_999) / 1_000_000);
            selector.select(this::ready, waitMs);
        }
        stopping = true;
        if (!connectedSent) {
            connected();
        }
        progress();
        for (Stream s : streams) {
            if (s != null && s.ch != null) {
                try {
                    s.ch.close();
                } catch (IOException ignored) {
                    // closing: nothing to count
                }
            }
        }
        selector.close();
        writeResult();
        emit("{\"event\": \"done\"}");
    }

    /** Starts connects while fewer than inFlightMax are under way. */
    void startMore() {
        if (starting) {
            return;     // a connect that failed at once settles inside the loop below
        }
        starting = true;
        try {
            startSome();
        } finally {
            starting = false;
        }
    }

    void startSome() {
        while (!connectOver && inFlight < inFlightMax && started < count) {
            Stream s = new Stream();
            streams[started++] = s;
            inFlight++;
            try {
                s.ch = SocketChannel.open();
                s.ch.configureBlocking(false);
                s.ch.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
                if (s.ch.connect(address)) {
                    s.key = s.ch.register(selector, 0, s);
                    connectedSocket(s);
                } else {
                    s.key = s.ch.register(selector, SelectionKey.OP_CONNECT, s);
                }
            } catch (IOException e) {
                failConnect(s, describe(e));
            }
        }
    }

    /** The connect phase is over: what has no stream yet is given up. */
    void giveUp() {
        connectOver = true;
        String what = "no stream within " + g(connectTimeoutS) + " s";
        for (int i = 0; i < started; i++) {
            Stream s = streams[i];
            if (!s.settled) {
                failConnect(s, what);
            }
        }
        while (started < count) {
            Stream s = new Stream();
            streams[started++] = s;
            s.settled = true;
            s.state = CLOSED;
            error(connectErrors, what);
            pending--;
        }
        if (!connectedSent) {
            connected();
        }
    }

    void settle(Stream s) {
        if (s.settled) {
            return;
        }
        s.settled = true;
        inFlight--;
        pending--;
        if (!connectedSent) {
            startMore();
            if (pending == 0) {
                connected();
            }
        }
    }

    void failConnect(Stream s, String what) {
        close(s);
        if (!s.settled) {
            error(connectErrors, what);
            settle(s);
        }
    }

    void close(Stream s) {
        s.state = CLOSED;
        s.head = null;
        if (s.key != null) {
            s.key.cancel();
        }
        if (s.ch != null) {
            try {
                s.ch.close();
            } catch (IOException ignored) {
                // already gone
            }
        }
    }

    /** A held stream the server ended (or that failed) before this process stopped. */
    void end(Stream s, String what) {
        close(s);
        if (!stopping) {
            ended++;
            error(endErrors, what);
        }
    }

    void ready(SelectionKey key) {
        Stream s = (Stream) key.attachment();
        if (s.state == CLOSED) {
            return;
        }
        try {
            if (s.state == CONNECTING) {
                if (key.isConnectable() && s.ch.finishConnect()) {
                    connectedSocket(s);
                }
                return;
            }
            if (key.isReadable()) {
                read(s);
            }
        } catch (IOException e) {
            if (s.held) {
                end(s, describe(e));
            } else {
                failConnect(s, describe(e));
            }
        }
    }

    void connectedSocket(Stream s) throws IOException {
        ByteBuffer req = ByteBuffer.wrap(request);
        s.ch.write(req);
        if (req.hasRemaining()) {
            throw new IOException("could not send the request at once");
        }
        s.state = HEAD;
        s.head = new byte[512];
        s.key.interestOps(SelectionKey.OP_READ);
    }

    void read(Stream s) throws IOException {
        rbuf.clear();
        int n = s.ch.read(rbuf);
        if (n < 0) {
            eof(s);
            return;
        }
        if (n == 0) {
            return;
        }
        rbuf.flip();
        rbuf.get(raw, 0, n);
        Instant t = Instant.now();
        long now = t.getEpochSecond() * 1_000_000L + t.getNano() / 1000;
        if (s.state == HEAD) {
            head(s, raw, n, now);
        } else {
            if (s.held) {
                chunks++;
            }
            body(s, raw, 0, n, now);
        }
    }

    void eof(Stream s) {
        if (!s.held) {
            failConnect(s, s.state == HEAD ? "closed before the response head" : "closed before the stream's first bytes");
        } else {
            end(s, s.state == RAW || s.state == SIZE ? "end of stream" : "end of stream inside a chunk");
        }
    }

    // ---------------------------------------------------------------------------------------------
    // HTTP: the response head, the chunked coding
    // ---------------------------------------------------------------------------------------------
    void head(Stream s, byte[] b, int n, long now) throws IOException {
        if (s.headLen + n > s.head.length) {
            if (s.headLen + n > MAX_HEAD) {
                failConnect(s, "a response head over " + MAX_HEAD + " bytes");
                return;
            }
            s.head = java.util.Arrays.copyOf(s.head, Math.max(s.head.length * 2, s.headLen + n));
        }
        int from = Math.max(0, s.headLen - 3);
        System.arraycopy(b, 0, s.head, s.headLen, n);
        s.headLen += n;
        int endOfHead = indexOf(s.head, from, s.headLen, END_OF_HEAD);
        if (endOfHead < 0) {
            return;
        }
        String text = new String(s.head, 0, endOfHead, StandardCharsets.ISO_8859_1);
        String[] lines = text.split("\r\n");
        String[] status = lines[0].split(" ", 3);
        int code = -1;
        try {
            code = status.length > 1 ? Integer.parseInt(status[1]) : -1;
        } catch (NumberFormatException ignored) {
            // reported below
        }
        String kind = "";
        boolean chunked = false;
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon <= 0) {
                continue;
            }
            String name = lines[i].substring(0, colon).trim().toLowerCase(java.util.Locale.ROOT);
            String value = lines[i].substring(colon + 1).trim();
            if (name.equals("content-type")) {
                kind = value;
            } else if (name.equals("transfer-encoding")) {
                chunked = value.toLowerCase(java.util.Locale.ROOT).contains("chunked");
            }
        }
        if (code != 200) {
            failConnect(s, code < 0 ? "not an HTTP response: " + limit(lines[0], 80) : "status " + code);
            return;
        }
        if (!kind.startsWith("text/event-stream")) {
            failConnect(s, "Content-Type '" + kind + "', not text/event-stream");
            return;
        }
        byte[] rest = s.head;
        int restFrom = endOfHead + 4, restTo = s.headLen;
        s.head = null;
        s.headLen = 0;
        s.state = chunked ? SIZE : RAW;
        if (restTo > restFrom) {
            body(s, rest, restFrom, restTo, now);
        }
    }

    /** Bytes of the response body, b[from, to): the chunked coding taken off, the payload to the events. */
    void body(Stream s, byte[] b, int from, int to, long now) {
        int i = from;
        while (i < to && s.state != CLOSED) {
            switch (s.state) {
                case RAW:
                    payload(s, b, i, to, now);
                    i = to;
                    break;
                case DATA: {
                    int n = (int) Math.min(s.remaining, to - i);
                    s.remaining -= n;
                    if (s.remaining == 0) {
                        s.state = DATA_END;
                    }
                    payload(s, b, i, i + n, now);
                    i += n;
                    break;
                }
                case DATA_END:
                    // the CRLF after a chunk's data
                    if (b[i++] == '\n') {
                        s.state = SIZE;
                        s.size = 0;
                        s.sizeDigits = 0;
                    }
                    break;
                case SIZE: {
                    byte c = b[i++];
                    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                    if (d >= 0) {
                        if (++s.sizeDigits > 8) {
                            fail(s, "a chunk size over 8 hex digits");
                            return;
                        }
                        s.size = s.size * 16 + d;
                    } else if (c == ';') {
                        s.state = SIZE_EXT;
                    } else if (c == '\n') {
                        sizeLine(s);
                    } else if (c != '\r' && c != ' ' && c != '\t') {
                        fail(s, "a bad chunk size");
                        return;
                    }
                    break;
                }
                case SIZE_EXT:
                    if (b[i++] == '\n') {
                        sizeLine(s);
                    }
                    break;
                default:
                    return;
            }
        }
    }

    void sizeLine(Stream s) {
        if (s.sizeDigits == 0) {
            fail(s, "a bad chunk size");
        } else if (s.size == 0) {
            // the last chunk: the server ended the stream
            if (s.held) {
                end(s, "end of stream");
            } else {
                failConnect(s, "closed before the stream's first bytes");
            }
        } else {
            s.remaining = s.size;
            s.state = DATA;
        }
    }

    void fail(Stream s, String what) {
        if (s.held) {
            end(s, what);
        } else {
            failConnect(s, what);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Server-sent events
    // ---------------------------------------------------------------------------------------------
    /** Payload bytes b[from, to) of stream s, read at `now` (us since the epoch). */
    void payload(Stream s, byte[] b, int from, int to, long now) {
        if (to <= from) {
            return;
        }
        if (!s.held) {
            s.held = true;
            held++;
            chunks++;
            settle(s);
        }
        bytes += to - from;
        if (s.carryLen == 0) {
            int rest = events(s, b, from, to, from, now);
            if (rest < to) {
                keep(s, b, rest, to);
            }
            return;
        }
        int old = s.carryLen;
        if (!keep(s, b, from, to)) {
            return;
        }
        int rest = events(s, s.carry, 0, s.carryLen, Math.max(0, old - 1), now);
        if (rest > 0) {
            System.arraycopy(s.carry, rest, s.carry, 0, s.carryLen - rest);
            s.carryLen -= rest;
        }
    }

    /** Appends b[from, to) to the stream's carry; false (the stream dropped) when one event outgrows MAX_EVENT. */
    boolean keep(Stream s, byte[] b, int from, int to) {
        int n = to - from;
        if (s.carry == null) {
            s.carry = new byte[Math.max(256, n)];
        } else if (s.carryLen + n > s.carry.length) {
            if (s.carryLen + n > MAX_EVENT) {
                end(s, "an event over " + MAX_EVENT + " bytes");
                return false;
            }
            s.carry = java.util.Arrays.copyOf(s.carry, Math.max(s.carry.length * 2, s.carryLen + n));
        }
        System.arraycopy(b, from, s.carry, s.carryLen, n);
        s.carryLen += n;
        return true;
    }

    /** Counts the complete events (blocks ended by a blank line) in b[from, to), the first blank line searched
     *  from `search`; returns where the incomplete rest begins. */
    int events(Stream s, byte[] b, int from, int to, int search, long now) {
        int p = from;
        while (true) {
            int blank = blankLine(b, Math.max(search, p), to);
            if (blank < 0) {
                return p;
            }
            event(s, b, p, blank, now);
            p = blank + 2;
            search = p;
        }
    }

    static int blankLine(byte[] b, int from, int to) {
        for (int i = from; i < to - 1; i++) {
            if (b[i] == '\n' && b[i + 1] == '\n') {
                return i;
            }
        }
        return -1;
    }

    /** One event, b[s, e) without its blank line: subscribers.py's parse_events, byte for byte. */
    void event(Stream st, byte[] b, int s, int e, long now) {
        if (!startsWith(b, s, e, ID)) {
            // retry:, comments, a reload without an id
            if (indexOf(b, s, e, EVENT_RELOAD) >= 0) {
                reloads++;
            } else if (startsWith(b, s, e, EVENT) || indexOf(b, s, e, NL_EVENT) >= 0) {
                otherEvents++;
            }
            return;
        }
        int nl = indexOf(b, s, e, '\n');
        if (nl < 0 || !startsWith(b, nl + 1, e, EVENT_UPDATE)) {
            if (indexOf(b, s, e, EVENT_RELOAD) >= 0) {
                reloads++;
            } else {
                otherEvents++;
            }
            return;
        }
        int k = indexOf(b, nl, e, MARKER);
        if (k < 0) {
            malformed++;
            return;
        }
        k += MARKER.length;
        int j = indexOf(b, k, e, ',');
        if (j < 0) {
            j = indexOf(b, k, e, '}');
        }
        if (j < 0) {
            j = e - 1;
        }
        long id = number(b, s + 3, nl);
        long committed = number(b, k, j);
        if (id == Long.MIN_VALUE || committed == Long.MIN_VALUE) {
            malformed++;
            return;
        }
        if (id <= skipUntil) {
            return;
        }
        if (st.events == 0) {
            st.first = id;
        } else if (id != st.last + 1) {
            if (id <= st.last) {
                duplicates++;
                return;
            }
            st.gaps += id - st.last - 1;
        }
        long d = now - committed;
        if (d < 0) {
            negative++;
            d = 0;
        }
        if (d > maxUs) {
            maxUs = d;
        }
        long bucket = d / BUCKET_US;
        hist[bucket < BUCKETS ? (int) bucket : BUCKETS - 1]++;
        received++;
        st.last = id;
        st.events++;
    }

    /** A decimal integer in b[from, to), blanks around it allowed (as Python's int() reads bytes);
     *  Long.MIN_VALUE when there is none. */
    static long number(byte[] b, int from, int to) {
        while (from < to && blank(b[from])) {
            from++;
        }
        while (to > from && blank(b[to - 1])) {
            to--;
        }
        boolean minus = false;
        if (from < to && (b[from] == '-' || b[from] == '+')) {
            minus = b[from] == '-';
            from++;
        }
        if (from >= to || to - from > 18) {
            return Long.MIN_VALUE;
        }
        long v = 0;
        for (int i = from; i < to; i++) {
            int d = b[i] - '0';
            if (d < 0 || d > 9) {
                return Long.MIN_VALUE;
            }
            v = v * 10 + d;
        }
        return minus ? -v : v;
    }

    static boolean blank(byte c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0x0b || c == 0x0c;
    }

    static boolean startsWith(byte[] b, int from, int to, byte[] p) {
        if (to - from < p.length) {
            return false;
        }
        for (int i = 0; i < p.length; i++) {
            if (b[from + i] != p[i]) {
                return false;
            }
        }
        return true;
    }

    static int indexOf(byte[] b, int from, int to, byte c) {
        for (int i = from; i < to; i++) {
            if (b[i] == c) {
                return i;
            }
        }
        return -1;
    }

    static int indexOf(byte[] b, int from, int to, char c) {
        return indexOf(b, from, to, (byte) c);
    }

    static int indexOf(byte[] b, int from, int to, byte[] p) {
        byte first = p[0];
        for (int i = from, last = to - p.length; i <= last; i++) {
            if (b[i] == first && startsWith(b, i, to, p)) {
                return i;
            }
        }
        return -1;
    }

    // ---------------------------------------------------------------------------------------------
    // Counting again, reporting
    // ---------------------------------------------------------------------------------------------
    /** The measurement starts again after event `afterId` (the warm-up's last): subscribers.py's Stats.restart. */
    void restart(long afterId) {
        skipUntil = afterId;
        java.util.Arrays.fill(hist, 0);
        received = chunks = bytes = negative = duplicates = reloads = otherEvents = malformed = 0;
        maxUs = -1;
        for (int i = 0; i < started; i++) {
            Stream s = streams[i];
            if (s.held) {
                s.first = s.last = s.gaps = 0;
                s.events = 0;
            }
        }
    }

    Long firstId() {
        Long min = null;
        for (int i = 0; i < started; i++) {
            Stream s = streams[i];
            if (s.held && s.events > 0 && (min == null || s.first < min)) {
                min = s.first;
            }
        }
        return min;
    }

    long lastId() {
        long max = 0;
        for (int i = 0; i < started; i++) {
            max = Math.max(max, streams[i].last);
        }
        return max;
    }

    void connected() {
        connectedSent = true;
        connectOver = true;
        nextProgress = System.nanoTime() + PROGRESS_NS;
        emit("{\"event\": \"connected\", \"held\": " + held + ", \"connect_errors\": " + json(connectErrors) + "}");
    }

    void progress() {
        emit("{\"event\": \"progress\", \"received\": " + received + ", \"ended\": " + ended + ", \"reloads\": "
             + reloads + ", \"chunks\": " + chunks + ", \"first_id\": " + firstId() + ", \"last_id\": " + lastId()
             + ", \"from\": " + skipUntil + "}");
    }

    void writeResult() throws IOException {
        long gaps = 0, withGaps = 0, withEvents = 0;
        Long firstMin = null, firstMax = null, lastMin = null, lastMax = null, perMin = null, perMax = null;
        long firstSum = 0, lastSum = 0;
        for (int i = 0; i < started; i++) {
            Stream s = streams[i];
            if (!s.held) {
                continue;
            }
            if (s.events > 0) {
                withEvents++;
                firstMin = firstMin == null ? s.first : Math.min(firstMin, s.first);
                firstMax = firstMax == null ? s.first : Math.max(firstMax, s.first);
                lastMin = lastMin == null ? s.last : Math.min(lastMin, s.last);
                lastMax = lastMax == null ? s.last : Math.max(lastMax, s.last);
                firstSum += s.first;
                lastSum += s.last;
                gaps += s.gaps;
                withGaps += s.gaps > 0 ? 1 : 0;
            }
            perMin = perMin == null ? s.events : Math.min(perMin, s.events);
            perMax = perMax == null ? s.events : Math.max(perMax, s.events);
        }
        StringBuilder h = new StringBuilder("{");
        for (int i = 0; i < BUCKETS; i++) {
            if (hist[i] != 0) {
                h.append(h.length() > 1 ? ", " : "").append('"').append(i).append("\": ").append(hist[i]);
            }
        }
        h.append('}');
        long[] cpu = cpuTicks();
        StringBuilder r = new StringBuilder(h.length() + 2048);
        r.append("{\"subscribers\": ").append(count).append(", \"held\": ").append(held)
         .append(", \"connect_errors\": ").append(json(connectErrors))
         .append(", \"received\": ").append(received).append(", \"chunks\": ").append(chunks)
         .append(", \"bytes\": ").append(bytes).append(", \"bucket_us\": ").append(BUCKET_US)
         .append(", \"hist\": ").append(h)
         .append(", \"negative\": ").append(negative).append(", \"max_us\": ").append(maxUs >= 0 ? String.valueOf(maxUs) : "null")
         .append(", \"gaps\": ").append(gaps).append(", \"subscribers_with_gaps\": ").append(withGaps)
         .append(", \"duplicates\": ").append(duplicates).append(", \"reloads\": ").append(reloads)
         .append(", \"other_events\": ").append(otherEvents).append(", \"malformed\": ").append(malformed)
         .append(", \"ended\": ").append(ended).append(", \"end_errors\": ").append(json(endErrors))
         .append(", \"silent\": ").append(held - withEvents).append(", \"with_events\": ").append(withEvents)
         .append(", \"first_id_min\": ").append(firstMin).append(", \"first_id_max\": ").append(firstMax)
         .append(", \"first_id_sum\": ").append(firstSum).append(", \"last_id_min\": ").append(lastMin)
         .append(", \"last_id_max\": ").append(lastMax).append(", \"last_id_sum\": ").append(lastSum)
         .append(", \"per_subscriber_min\": ").append(perMin).append(", \"per_subscriber_max\": ").append(perMax)
         .append(", \"pid\": ").append(ProcessHandle.current().pid())
         .append(", \"cpu_user_s\": ").append(cpu[0] / 100.0).append(", \"cpu_sys_s\": ").append(cpu[1] / 100.0)
         .append(", \"client\": \"java\"}");
        Path tmp = Path.of(result + ".tmp");
        Files.writeString(tmp, r, StandardCharsets.UTF_8);
        Files.move(tmp, result, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** utime and stime of this process in clock ticks (fields 14 and 15 of /proc/self/stat; USER_HZ is 100 on Linux). */
    static long[] cpuTicks() {
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])};
        } catch (IOException | RuntimeException e) {
            return new long[] {0, 0};
        }
    }

    static void error(Map<String, Integer> table, String what) {
        table.merge(what, 1, Integer::sum);
    }

    static String describe(Exception e) {
        return limit(e.getClass().getSimpleName() + ": " + e.getMessage(), 120);
    }

    static String limit(String s, int n) {
        return s.length() > n ? s.substring(0, n) : s;
    }

    /** A number as Python's %g prints it for the counts used here (60.0 -> 60, 2.5 -> 2.5). */
    static String g(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? String.valueOf((long) v) : String.valueOf(v);
    }

    static String json(Map<String, Integer> m) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Integer> e : m.entrySet()) {
            if (b.length() > 1) {
                b.append(", ");
            }
            b.append(quote(e.getKey())).append(": ").append(e.getValue());
        }
        return b.append('}').toString();
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    void emit(String line) {
        out.print(line);
        out.print('\n');
        out.flush();
    }

    // ---------------------------------------------------------------------------------------------
    // The command line
    // ---------------------------------------------------------------------------------------------
    public static void main(String[] args) throws Exception {
        Map<String, String> o = new LinkedHashMap<>(Map.of("--host", "127.0.0.1", "--path", "/updates/events",
                "--in-flight", "250", "--connect-timeout", "60", "--deadline", "600"));
        boolean noStdin = false;
        List<String> unknown = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--no-stdin")) {
                noStdin = true;
            } else if (a.startsWith("--") && a.contains("=")) {
                o.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
            } else if (a.startsWith("--") && i + 1 < args.length) {
                o.put(a, args[++i]);
            } else {
                unknown.add(a);
            }
        }
        for (String need : List.of("--port", "--count", "--result")) {
            if (!o.containsKey(need)) {
                unknown.add("missing " + need);
            }
        }
        if (!unknown.isEmpty()) {
            System.err.println("usage: java FanoutClient --port P --count N --result FILE [--host H] [--path P] "
                               + "[--in-flight K] [--connect-timeout S] [--deadline S] [--no-stdin]; not understood: "
                               + unknown);
            System.exit(2);
        }
        FanoutClient c = new FanoutClient(o.get("--host"), Integer.parseInt(o.get("--port")), o.get("--path"),
                Integer.parseInt(o.get("--count")), Integer.parseInt(o.get("--in-flight")),
                Double.parseDouble(o.get("--connect-timeout")), Double.parseDouble(o.get("--deadline")),
                Path.of(o.get("--result")));
        CountDownLatch done = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        // SIGTERM, SIGINT: stop as "stop" does, and let the loop write its result before the JVM goes.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            c.terminated = true;
            c.selector.wakeup();
            try {
                done.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                // going anyway
            }
        }, "fanout-client-stop"));
        if (!noStdin) {
            Thread watch = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        String[] w = line.trim().split("\\s+");
                        if (w[0].equals("stop")) {
                            break;
                        }
                        if (w[0].equals("from") && w.length == 2 && w[1].matches("[0-9]{1,18}")) {
                            c.restarts.add(Long.parseLong(w[1]));
                            c.selector.wakeup();
                        }
                    }
                } catch (IOException ignored) {
                    // stdin gone: stop
                }
                c.stopRequested = true;
                c.selector.wakeup();
            }, "fanout-client-stdin");
            watch.setDaemon(true);
            watch.start();
        }
        try {
            c.run();
        } finally {
            done.countDown();
        }
    }
}

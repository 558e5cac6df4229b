package kiln.server;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

import kiln.http.Response;
import kiln.http.Request;

/**
 * Middleware that writes one line per request in the combined log format (Apache's and nginx's
 * default, which log analyzers read), followed by the request id when a {@link RequestId} filter
 * runs before this one:
 * <pre>
 * 127.0.0.1 - - [27/Nov/2026:01:02:03 +0000] "GET /db HTTP/1.1" 200 32 "-" "curl/7.88.1" "5f3a09c1-1a7"
 * </pre>
 * host, identity (always {@code -}), the authenticated user ({@link Authentication#USER}) or
 * {@code -}, the time the answer was decided, the request line, the status, the body's bytes
 * ({@code -} for none, for HEAD and for a streamed body), {@code Referer}, {@code User-Agent}.
 * Behind nginx the host is nginx's: its own access log has the client's. Every request gets its
 * line: answered by a handler, by the router (404, 405, OPTIONS), by the failure policy, and on kiln's
 * own HTTP layer also those refused before routing (400, 408, 413, 431, with the request line
 * {@code "-"}). Quotes and backslashes in logged values are escaped as {@code \"} and {@code \\},
 * and every byte outside printable ASCII (0x20-0x7E) as {@code \xhh}, as nginx does: C0 and C1
 * controls (U+0085 and U+2028 are line breaks to many readers) and DEL included, so a client cannot
 * forge a line, and the log stays ASCII. A header value's bytes reach kiln one char per byte
 * (ISO-8859-1, on kiln's parser, Jetty and Undertow alike), so each is its own {@code \xhh}; a
 * char above 0xFF (a Basic user name, decoded as UTF-8) is written as its UTF-8 bytes.
 *
 * <p>Writing never waits on a request's thread: lines go to a queue of {@value #QUEUE_LINES} that
 * a daemon thread ({@code kiln-access-log}) writes out, flushing whenever it has caught up. When
 * the disk or the reader of stdout cannot keep up and the queue is full, lines are dropped and
 * counted (a warning says how many, at most once a minute); {@link #close} (also run at exit)
 * writes what is queued. For rotation, use logrotate's {@code copytruncate} (the file is opened for
 * appending) or log to stdout, the journal's.
 */
public final class AccessLog implements Filter, AutoCloseable {
    private static final Logger LOG = Logger.getLogger(AccessLog.class.getName());
    static final int QUEUE_LINES = 16_384;
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("dd/MMM/yyyy:HH:mm:ss Z", Locale.US);
    private static final long WARN_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private final BlockingQueue<String> lines = new ArrayBlockingQueue<>(QUEUE_LINES);
    private final Writer out;
    private final Thread writer;
    private final AtomicLong dropped = new AtomicLong();
    private volatile boolean closed;

    private AccessLog(Writer out, String where) {
        this.out = out;
        this.writer = new Thread(this::drain, "kiln-access-log");
        writer.setDaemon(true);
        writer.start();
        Runtime.getRuntime().addShutdownHook(new Thread(this::close, "kiln-access-log-flush"));
        LOG.info("access log: " + where);
    }

    /**
     * An access log on standard output, one combined-format line per request:
     * {@code router.filter(new RequestId()).filter(AccessLog.toStandardOutput())}. Add it after
     * {@link RequestId} (its lines then end with the id) and before {@link Authentication} (it then
     * logs the 401s too). Make one per process: each has its writer thread.
     *
     * @return an access log written to the process's standard output (the journal's, under systemd)
     */
    public static AccessLog toStandardOutput() {
        return new AccessLog(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)), "standard output");
    }

    /**
     * @param file appended to, created if missing
     * @return an access log written to {@code file}
     * @throws IOException when the file cannot be opened for appending
     */
    public static AccessLog toFile(Path file) throws IOException {
        Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND,
            StandardOpenOption.WRITE);
        return new AccessLog(w, file.toAbsolutePath().toString());
    }

    @Override
    public Response after(Request request, Response response) {
        String line = request.method() + " " + request.target() + " HTTP/1." + request.minorVersion();
        boolean noBody = response.stream != null || "HEAD".equals(request.method()) || response.body.length == 0;
        enqueue(format(request.remoteAddress(), (String) request.attribute(Authentication.USER), line, response.status,
            noBody ? -1 : response.body.length, request.header("Referer"), request.header("User-Agent"), RequestId.of(request)));
        return response;
    }

    @Override
    public void refused(InetSocketAddress remote, Response response) {
        enqueue(format(remote, null, null, response.status, response.body.length == 0 ? -1 : response.body.length, null, null, null));
    }

    /** @return one line of the combined log format, with the request id appended when there is one */
    static String format(InetSocketAddress remote, String user, String requestLine, int status, long bytes,
                         String referer, String userAgent, String requestId) {
        StringBuilder b = new StringBuilder(160);
        b.append(remote == null ? "-" : remote.getAddress() != null ? remote.getAddress().getHostAddress() : remote.getHostString());
        b.append(" - ").append(user == null ? "-" : escape(user));
        b.append(" [").append(TIME.format(ZonedDateTime.now(ZoneOffset.UTC))).append("] \"");
        b.append(requestLine == null ? "-" : escape(requestLine)).append("\" ").append(status).append(' ');
        b.append(bytes < 0 ? "-" : Long.toString(bytes));
        b.append(" \"").append(referer == null ? "-" : escape(referer));
        b.append("\" \"").append(userAgent == null ? "-" : escape(userAgent)).append('"');
        if (requestId != null) b.append(" \"").append(escape(requestId)).append('"');
        return b.toString();
    }

    /**
     * @return {@code s} with {@code "} and {@code \} escaped by a backslash, and every other char
     *         outside 0x20-0x7E as {@code \xhh}: one for a char up to 0xFF, one per UTF-8 byte above
     */
    static String escape(String s) {
        StringBuilder b = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean plain = c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
            if (plain) {
                if (b != null) b.append(c);
                continue;
            }
            if (b == null) b = new StringBuilder(s.length() + 16).append(s, 0, i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c <= 0xff) {
                hex(b, c);
            } else {
                int codePoint = s.codePointAt(i);
                for (byte octet : new String(Character.toChars(codePoint)).getBytes(StandardCharsets.UTF_8)) hex(b, octet & 0xff);
                i += Character.charCount(codePoint) - 1;
            }
        }
        return b == null ? s : b.toString();
    }

    private static void hex(StringBuilder b, int octet) {
        b.append("\\x").append(HEX[octet >> 4]).append(HEX[octet & 0xf]);
    }

    private void enqueue(String line) {
        if (closed || !lines.offer(line)) dropped.incrementAndGet();
    }

    /** The writer thread: writes lines as they come, flushes when it has caught up, warns about drops. */
    private void drain() {
        List<String> batch = new ArrayList<>(256);
        long warnedAt = System.nanoTime() - WARN_EVERY_NANOS;
        long warnedDropped = 0;
        try {
            while (!closed || !lines.isEmpty()) {
                String first = lines.poll(1, TimeUnit.SECONDS);
                if (first != null) {
                    out.write(first);
                    out.write('\n');
                    batch.clear();
                    lines.drainTo(batch, 4096);
                    for (String l : batch) {
                        out.write(l);
                        out.write('\n');
                    }
                    if (lines.isEmpty()) out.flush();
                }
                long d = dropped.get();
                if (d != warnedDropped && System.nanoTime() - warnedAt >= WARN_EVERY_NANOS) {
                    LOG.warning("access log: " + (d - warnedDropped) + " lines dropped: the log's output cannot keep up ("
                        + d + " in all)");
                    warnedDropped = d;
                    warnedAt = System.nanoTime();
                }
            }
            out.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            closed = true;
            LOG.log(Level.SEVERE, "access log: writing failed; no more lines are written", e);
        }
    }

    /** @return lines dropped because the queue was full (or the log closed) */
    public long dropped() {
        return dropped.get();
    }

    /** Stops taking lines, writes those queued and flushes; waits up to 2 s. Idempotent. */
    @Override
    public void close() {
        closed = true;
        try {
            writer.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

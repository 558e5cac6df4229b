package kiln.conformance;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a well-behaved client sees of a server under attack, measured on a thread of its own: a
 * keep-alive {@code GET /plaintext} every {@value #EVERY_MS} ms from its own address (a new
 * connection when the server closed the last one), each round trip's latency recorded; and the
 * server's own figures from {@code /metrics} every {@value #METRICS_EVERY_MS} ms: the heap in use
 * (garbage included) and kiln's request memory ({@code kiln_request_memory_bytes}, where the server
 * has it).
 */
final class Probe implements AutoCloseable {
    static final int EVERY_MS = 5;
    static final int METRICS_EVERY_MS = 250;
    /** A request not answered this long counts as this long, and its connection is dropped. */
    static final int TIMEOUT_MS = 5_000;
    private static final byte[] PLAINTEXT = "GET /plaintext HTTP/1.1\r\nHost: probe\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] METRICS = "GET /metrics HTTP/1.1\r\nHost: probe\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final Pattern CONTENT_LENGTH = Pattern.compile("\r\nContent-Length: *(\\d+)", Pattern.CASE_INSENSITIVE);

    private final int port;
    private final InetAddress from;
    private final List<Long> latenciesMicros = Collections.synchronizedList(new ArrayList<>());
    private volatile int failures;
    private volatile String lastFailure;
    private volatile double heapPeak;
    private volatile double requestMemoryPeak = Double.NaN;
    private volatile double requestMemoryLimit = Double.NaN;
    private volatile boolean stopping;
    private final Thread plaintext;
    private final Thread metrics;

    /** Starts probing the server on 127.0.0.1:{@code port} from 127.0.0.3 (plaintext) and 127.0.0.4 (metrics). */
    Probe(int port) {
        this.port = port;
        try {
            this.from = InetAddress.getByName("127.0.0.3");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        plaintext = new Thread(this::probePlaintext, "probe-plaintext");
        plaintext.setDaemon(true);
        plaintext.start();
        metrics = new Thread(this::probeMetrics, "probe-metrics");
        metrics.setDaemon(true);
        metrics.start();
    }

    private Socket connect(String source) throws IOException {
        Socket s = new Socket();
        s.setTcpNoDelay(true);
        s.bind(new InetSocketAddress(InetAddress.getByName(source), 0));
        s.connect(new InetSocketAddress(ServerProcess.BIND, port), TIMEOUT_MS);
        s.setSoTimeout(TIMEOUT_MS);
        return s;
    }

    private void probePlaintext() {
        Socket s = null;
        while (!stopping) {
            long start = System.nanoTime();
            try {
                if (s == null) s = connect(from.getHostAddress());
                s.getOutputStream().write(PLAINTEXT);
                String response = readResponse(s.getInputStream());
                if (!response.startsWith("HTTP/1.1 200") || !response.endsWith("Hello, World!")) {
                    throw new IOException("unexpected answer: " + response.lines().findFirst().orElse(""));
                }
                latenciesMicros.add((System.nanoTime() - start) / 1_000);
                if (response.toLowerCase(Locale.ROOT).contains("\r\nconnection: close")) s = closeQuietly(s);
            } catch (IOException e) {
                s = closeQuietly(s);
                long took = (System.nanoTime() - start) / 1_000;
                latenciesMicros.add(Math.max(took, 1_000L * TIMEOUT_MS));
                failures++;
                lastFailure = e.toString();
            }
            sleep(EVERY_MS);
        }
        closeQuietly(s);
    }

    private void probeMetrics() {
        Socket s = null;
        while (!stopping) {
            try {
                if (s == null) s = connect("127.0.0.4");
                s.getOutputStream().write(METRICS);
                String text = readResponse(s.getInputStream());
                double heap = sum(text, "jvm_memory_used_bytes{area=\"heap\"}");
                if (heap > heapPeak) heapPeak = heap;
                double memory = sum(text, "kiln_request_memory_bytes ");
                if (text.contains("kiln_request_memory_bytes ")) {
                    if (Double.isNaN(requestMemoryPeak) || memory > requestMemoryPeak) requestMemoryPeak = memory;
                    requestMemoryLimit = sum(text, "kiln_request_memory_limit_bytes ");
                }
                if (text.toLowerCase(Locale.ROOT).contains("\r\nconnection: close")) s = closeQuietly(s);
            } catch (IOException e) {
                s = closeQuietly(s);
            }
            sleep(METRICS_EVERY_MS);
        }
        closeQuietly(s);
    }

    /** @return the value of the first line of {@code text} that starts with {@code series}, 0 when none */
    private static double sum(String text, String series) {
        int at = text.indexOf("\n" + series);
        if (at < 0) return 0;
        int start = at + 1 + series.length();
        int end = text.indexOf('\n', start);
        String value = text.substring(start, end < 0 ? text.length() : end).trim();
        int space = value.indexOf(' ');
        try {
            return Double.parseDouble(space < 0 ? value : value.substring(0, space));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** Reads one response framed by Content-Length; @return its head and body as text */
    private static String readResponse(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) throw new IOException("closed before a full response head: " + head);
            head.append((char) b);
        }
        Matcher m = CONTENT_LENGTH.matcher(head);
        int length = m.find() ? Integer.parseInt(m.group(1)) : 0;
        byte[] body = in.readNBytes(length);
        if (body.length < length) throw new IOException("closed after " + body.length + " of " + length + " body bytes");
        return head + new String(body, StandardCharsets.ISO_8859_1);
    }

    private static Socket closeQuietly(Socket s) {
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // dropping it anyway
            }
        }
        return null;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops probing. */
    @Override
    public void close() {
        stopping = true;
        try {
            plaintext.join(TIMEOUT_MS + 1_000);
            metrics.join(TIMEOUT_MS + 1_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** @return the {@code q} quantile (0..1) of the round trips so far, ms; 0 with none */
    double latencyMs(double q) {
        List<Long> sorted;
        synchronized (latenciesMicros) {
            sorted = new ArrayList<>(latenciesMicros);
        }
        if (sorted.isEmpty()) return 0;
        Collections.sort(sorted);
        int i = (int) Math.min(sorted.size() - 1, Math.ceil(q * sorted.size()) - 1);
        return sorted.get(Math.max(0, i)) / 1000.0;
    }

    int requests() {
        return latenciesMicros.size();
    }

    int failures() {
        return failures;
    }

    String lastFailure() {
        return lastFailure;
    }

    /** @return the most heap in use seen, bytes (garbage included) */
    double heapPeak() {
        return heapPeak;
    }

    /** @return the most request memory the server held, bytes; NaN when it does not say */
    double requestMemoryPeak() {
        return requestMemoryPeak;
    }

    /** @return the server's request memory limit, bytes; NaN when it has none */
    double requestMemoryLimit() {
        return requestMemoryLimit;
    }
}

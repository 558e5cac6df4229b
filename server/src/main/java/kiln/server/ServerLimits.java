package kiln.server;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import kiln.http.Limits;

/**
 * Every bound a server puts on what its clients can make it hold, in one immutable value: memory
 * (the request memory, the connection cap), time (the header and idle timeouts, the minimum data
 * rates with their grace period) and per-client shares (connections and event streams per client
 * address). Kestrel gathers the same in {@code KestrelServerLimits}; nginx names them
 * {@code client_body_buffer_size}, {@code client_header_timeout}, {@code client_body_timeout},
 * {@code send_timeout}, {@code limit_conn}. Each is enforced once: kiln's own HTTP layer in its
 * connection state machine, the library front ends with their library's knob where it has one and
 * with kiln's own code where it has none (docs/operations.md, "Hostile clients").
 *
 * <pre>{@code
 * ServerLimits limits = ServerLimits.defaults().headerTimeout(5_000).maxClientConnections(64);
 * }</pre>
 * The command line's flags ({@link ServerOptions#limits}) set the same values.
 */
public final class ServerLimits {
    /** The default minimum data rate, bytes/s: Kestrel's {@code MinRequestBodyDataRate} and {@code MinResponseDataRate}. */
    public static final long MIN_RATE = 240;
    /** The default grace period of the minimum data rates, ms: Kestrel's. */
    public static final long RATE_GRACE_MS = 5_000;
    /** The default connections per client address: far above a browser's 6, far below a server's cap. */
    public static final int CLIENT_CONNECTIONS = 256;
    /** The default event streams per client address: a browser opens at most 6 connections to a host. */
    public static final int CLIENT_STREAMS = 32;

    private long idleTimeoutMs = 60_000;
    private long headerTimeoutMs = 10_000;
    private int maxContentBytes = Limits.MAX_CONTENT;
    private int maxConnections = defaultMaxConnections();
    private long maxRequestMemory = Math.max(1, Runtime.getRuntime().maxMemory() / 4);
    private long minRequestRate = MIN_RATE;
    private long minResponseRate = MIN_RATE;
    private long rateGraceMs = RATE_GRACE_MS;
    private int maxClientConnections = CLIENT_CONNECTIONS;
    private int maxClientStreams = CLIENT_STREAMS;
    private int maxStreams = Integer.MAX_VALUE;
    private Set<InetAddress> proxies = loopback();

    private ServerLimits() {
    }

    /**
     * @return the defaults: idle timeout 60 s, header timeout 10 s, content 64 KiB, connections the
     *         open-files limit minus 64, request memory a quarter of the heap ({@code -Xmx}), content and
     *         responses at 240 bytes/s or more after a 5 s grace period, 256 connections and 32 event
     *         streams per client address (loopback, a proxy in front, exempt), no cap on streams but the
     *         connections'
     */
    public static ServerLimits defaults() {
        return new ServerLimits();
    }

    private ServerLimits copy() {
        ServerLimits c = new ServerLimits();
        c.idleTimeoutMs = idleTimeoutMs;
        c.headerTimeoutMs = headerTimeoutMs;
        c.maxContentBytes = maxContentBytes;
        c.maxConnections = maxConnections;
        c.maxRequestMemory = maxRequestMemory;
        c.minRequestRate = minRequestRate;
        c.minResponseRate = minResponseRate;
        c.rateGraceMs = rateGraceMs;
        c.maxClientConnections = maxClientConnections;
        c.maxClientStreams = maxClientStreams;
        c.maxStreams = maxStreams;
        c.proxies = proxies;
        return c;
    }

    private static void atLeast(String what, long value, long min) {
        if (value < min) throw new IllegalArgumentException(what + " must be at least " + min + ", got " + value);
    }

    /** @param ms how long a keep-alive connection may wait for its next request (> 0); a write without a minimum rate too */
    public ServerLimits idleTimeout(long ms) {
        atLeast("idle timeout (ms)", ms, 1);
        ServerLimits c = copy();
        c.idleTimeoutMs = ms;
        return c;
    }

    /** @param ms how long a request's head may take to arrive once its first byte is in (> 0); 408 beyond */
    public ServerLimits headerTimeout(long ms) {
        atLeast("header timeout (ms)", ms, 1);
        ServerLimits c = copy();
        c.headerTimeoutMs = ms;
        return c;
    }

    /** @param bytes the most content bytes a request may have, 0..{@link Limits#MAX_CONTENT_CEILING}; 413 beyond */
    public ServerLimits maxContent(int bytes) {
        ServerLimits c = copy();
        c.maxContentBytes = checkMaxContent(bytes);
        return c;
    }

    /** @param n the most connections open at once (> 0): beyond, 503 (kiln's own layer) or the listen backlog (the libraries) */
    public ServerLimits maxConnections(int n) {
        atLeast("max connections", n, 1);
        ServerLimits c = copy();
        c.maxConnections = n;
        return c;
    }

    /**
     * @param bytes the most request bytes all connections may hold at once (heads beyond a connection's
     *              first KiB, contents until their handler answers); a request that does not fit is 503
     */
    public ServerLimits maxRequestMemory(long bytes) {
        atLeast("max request memory (bytes)", bytes, 1);
        ServerLimits c = copy();
        c.maxRequestMemory = bytes;
        return c;
    }

    /** @param bytesPerSecond the least rate a request's content must arrive at once its head is in; 0: none (the header timeout then covers it) */
    public ServerLimits minRequestRate(long bytesPerSecond) {
        atLeast("min request rate (bytes/s)", bytesPerSecond, 0);
        ServerLimits c = copy();
        c.minRequestRate = bytesPerSecond;
        return c;
    }

    /** @param bytesPerSecond the least rate a response must be written at to a client that does not read; 0: none (the idle timeout then) */
    public ServerLimits minResponseRate(long bytesPerSecond) {
        atLeast("min response rate (bytes/s)", bytesPerSecond, 0);
        ServerLimits c = copy();
        c.minResponseRate = bytesPerSecond;
        return c;
    }

    /** @param ms how far behind a minimum rate a client may fall before it is cut (> 0) */
    public ServerLimits rateGrace(long ms) {
        atLeast("rate grace period (ms)", ms, 1);
        ServerLimits c = copy();
        c.rateGraceMs = ms;
        return c;
    }

    /** @param n the most connections one client address may hold open (> 0); beyond, its new ones are refused */
    public ServerLimits maxClientConnections(int n) {
        atLeast("max connections per client", n, 1);
        ServerLimits c = copy();
        c.maxClientConnections = n;
        return c;
    }

    /** @param n the most event streams one client address may hold open (>= 0); beyond, 503 with Retry-After */
    public ServerLimits maxClientStreams(int n) {
        atLeast("max streams per client", n, 0);
        ServerLimits c = copy();
        c.maxClientStreams = n;
        return c;
    }

    /** @param n the most event streams open at once (>= 0); beyond, 503 with Retry-After */
    public ServerLimits maxStreams(int n) {
        atLeast("max streams", n, 0);
        ServerLimits c = copy();
        c.maxStreams = n;
        return c;
    }

    /**
     * For a front end whose every event stream holds one of its {@code threads} (a blocking mode):
     * at most half of them stream, so that the other half still serve requests however many
     * subscribers come; logged.
     *
     * @param pool names the threads, for the log, e.g. {@code Jetty's pool}
     * @return these limits with {@link #maxStreams} at most {@code threads / 2}
     */
    public ServerLimits streamsHoldThreads(int threads, String pool) {
        int cap = Math.max(1, threads / 2);
        if (maxStreams <= cap) return this;
        java.util.logging.Logger.getLogger(ServerLimits.class.getName()).info("at most " + cap + " event streams: each holds one of the "
            + threads + " threads of " + pool + ", and half of them are kept for requests (--max-streams lowers it)");
        return maxStreams(cap);
    }

    /**
     * @param addresses the reverse proxies in front of the server (nginx): their connections carry many
     *                  clients, so the per-client limits do not apply to them; none for no exemption
     */
    public ServerLimits proxies(Set<InetAddress> addresses) {
        ServerLimits c = copy();
        c.proxies = Set.copyOf(addresses);
        return c;
    }

    /**
     * @param spec {@code none}, or IP addresses separated by commas, e.g. {@code 127.0.0.1,::1}
     * @return the addresses
     * @throws IllegalArgumentException naming an entry that is not an IP address (host names are not looked up)
     */
    public static Set<InetAddress> parseAddresses(String spec) {
        if (spec.isBlank() || spec.trim().equals("none")) return Set.of();
        List<InetAddress> all = new ArrayList<>();
        for (String a : spec.split(",")) {
            String s = a.trim();
            if (!s.matches("[0-9.]+|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*")) {
                throw new IllegalArgumentException("'" + s + "' is not an IP address (give addresses, not host names)");
            }
            try {
                all.add(InetAddress.getByName(s));
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("'" + s + "' is not an IP address: " + e.getMessage(), e);
            }
        }
        return Set.copyOf(all);
    }

    private static Set<InetAddress> loopback() {
        return parseAddresses("127.0.0.1,::1");
    }

    /** @return how long a keep-alive connection may wait for its next request, ms ({@code --idle-timeout}) */
    public long idleTimeoutMs() {
        return idleTimeoutMs;
    }

    /** @return how long a started request head may take to arrive whole, ms, before a 408 and the close ({@code --header-timeout}) */
    public long headerTimeoutMs() {
        return headerTimeoutMs;
    }

    /** @return the most bytes of content a request may have ({@code --max-content}); more is 413 */
    public int maxContentBytes() {
        return maxContentBytes;
    }

    /** @return the most connections open at once ({@code --max-connections}); past it a new one is refused (503 on kiln's own HTTP layer) */
    public int maxConnections() {
        return maxConnections;
    }

    /** @return the most request bytes all connections may hold at once beyond their first KiB (heads, contents until answered), bytes ({@code --max-request-memory}); past it, 503 */
    public long maxRequestMemory() {
        return maxRequestMemory;
    }

    /** @return the slowest a request's content may arrive once the grace period is over, bytes/s ({@code --min-request-rate}); slower is 408 and the close */
    public long minRequestRate() {
        return minRequestRate;
    }

    /** @return the slowest a client may read a response once the grace period is over, bytes/s ({@code --min-response-rate}); slower is cut */
    public long minResponseRate() {
        return minResponseRate;
    }

    /** @return how long the minimum data rates wait before they apply, ms ({@code --min-rate-grace}) */
    public long rateGraceMs() {
        return rateGraceMs;
    }

    /** @return the most connections one client address may hold open ({@code --max-client-connections}); past it, 503 and the close */
    public int maxClientConnections() {
        return maxClientConnections;
    }

    /** @return the most event streams one client address may hold open ({@code --max-client-streams}); past it, 503 */
    public int maxClientStreams() {
        return maxClientStreams;
    }

    /** @return the most streamed responses open at once, all clients together ({@code --max-streams}); past it, 503 */
    public int maxStreams() {
        return maxStreams;
    }

    /** @return the addresses exempt from the per-client shares: loopback, and the proxies in front ({@code --proxies}) */
    public Set<InetAddress> proxies() {
        return proxies;
    }

    /**
     * @return the largest buffer one request can need: its head at the largest plus its content at
     *         {@link #maxContentBytes} twice over (chunk framing), bytes
     */
    public long largestRequest() {
        return Limits.MAX_REQUEST_LINE + Limits.MAX_HEADER_BYTES + 2L * maxContentBytes;
    }

    /** @return the limits in one line, for the log at start */
    public String describe() {
        return String.format(Locale.ROOT, "limits: %d connections (%d per client), request memory %s (%d requests of --max-content %d at once),"
                + " header timeout %d ms, idle timeout %d ms, content at %s and responses at %s after a %d ms grace,"
                + " %s streams (%d per client), per-client limits exempt %s",
            maxConnections, maxClientConnections, megabytes(maxRequestMemory), maxRequestMemory / Math.max(1, largestRequest()),
            maxContentBytes, headerTimeoutMs, idleTimeoutMs, rate(minRequestRate), rate(minResponseRate), rateGraceMs,
            maxStreams == Integer.MAX_VALUE ? "no cap on" : Integer.toString(maxStreams), maxClientStreams,
            proxies.isEmpty() ? "none" : proxies.stream().map(InetAddress::getHostAddress).sorted().toList());
    }

    private static String rate(long bytesPerSecond) {
        return bytesPerSecond == 0 ? "any rate" : bytesPerSecond + " bytes/s or more";
    }

    static String megabytes(long bytes) {
        return String.format(Locale.ROOT, "%.1f MB", bytes / 1048576.0);
    }

    /**
     * @return this process's open-files limit ({@code ulimit -n}) minus a reserve of 64 descriptors
     *         for the database, jars and logs, at least 16; 10000 when the JVM cannot tell
     */
    public static int defaultMaxConnections() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.UnixOperatingSystemMXBean) {
            long max = ((com.sun.management.UnixOperatingSystemMXBean) os).getMaxFileDescriptorCount();
            return (int) Math.max(16, Math.min(Integer.MAX_VALUE, max - 64));
        }
        return 10_000;
    }

    /**
     * @return {@code bytes}, a valid {@code --max-content}
     * @throws IllegalArgumentException when it is below 0 or above {@link kiln.http.Limits#MAX_CONTENT_CEILING}
     */
    private static int checkMaxContent(int bytes) {
        if (bytes < 0 || bytes > kiln.http.Limits.MAX_CONTENT_CEILING) {
            throw new IllegalArgumentException("--max-content must be 0.." + kiln.http.Limits.MAX_CONTENT_CEILING + " bytes, got " + bytes);
        }
        return bytes;
    }
}

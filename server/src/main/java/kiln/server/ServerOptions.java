package kiln.server;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Command-line options every front end shares. A front end declares its own picocli
 * {@code @Command} class with {@code @Mixin ServerOptions server} (plus options of its own) and
 * calls {@link #parseOrExit}, which can add the app's endpoint list to its help.
 */
public final class ServerOptions {
    @Option(names = "--port", paramLabel = "N", defaultValue = "8080",
        description = "TCP port to listen on; 0 picks a free port (default: ${DEFAULT-VALUE}).")
    public int port;

    @Option(names = "--bind", paramLabel = "ADDR", defaultValue = "0.0.0.0",
        description = "Address to listen on: 0.0.0.0 for every interface, 127.0.0.1 for this machine only (default: ${DEFAULT-VALUE}).")
    public String bind;

    @Option(names = "--data", paramLabel = "DIR", defaultValue = "data",
        description = "LMDB data directory (lmdb:DIR), created on first start (default: ./${DEFAULT-VALUE}).")
    public Path data;

    @Option(names = "--db", paramLabel = "URL",
        description = "Serve from the database at URL, on an engine in this jar, instead of LMDB in --data:"
            + " postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE[?readConnections=N] or jdbc:postgresql://... (several servers may share"
            + " one database: docs/scaling.md; readConnections: connections for reads, default 8), lmdb:DIR[?maxMapSize=BYTES]. Default: LMDB.")
    public String db;

    @Option(names = "--threads", paramLabel = "N",
        description = "Carrier (worker) threads that run handlers; default: the number of CPU cores (${sys:kiln.cores}).")
    public Integer threads;

    @Option(names = "--idle-timeout", paramLabel = "MS", defaultValue = "60000",
        description = "Close a keep-alive connection idle this long between requests, or stuck writing to a client that does not read (default: ${DEFAULT-VALUE}).")
    public long idleTimeoutMs;

    @Option(names = "--header-timeout", paramLabel = "MS", defaultValue = "10000",
        description = "Close (408 where the server library allows) a connection whose started request head is not complete after this long: slowloris (default: ${DEFAULT-VALUE}).")
    public long headerTimeoutMs;

    @Option(names = "--min-request-rate", paramLabel = "BYTES_PER_S", defaultValue = "240",
        description = "Once a request's head is in, its content must arrive at this rate or faster; a client that falls more than"
            + " --min-rate-grace behind is answered 408 and closed (Kestrel's MinRequestBodyDataRate); 0: no rate, the header timeout"
            + " covers the content (default: ${DEFAULT-VALUE}).")
    public long minRequestRate;

    @Option(names = "--min-response-rate", paramLabel = "BYTES_PER_S", defaultValue = "240",
        description = "A response must be written at this rate or faster once the client's buffers are full; a client that does not read"
            + " is closed after --min-rate-grace plus the response's bytes at this rate (Kestrel's MinResponseDataRate); 0: no rate,"
            + " the idle timeout bounds a write (default: ${DEFAULT-VALUE}).")
    public long minResponseRate;

    @Option(names = "--min-rate-grace", paramLabel = "MS", defaultValue = "5000",
        description = "How far behind the minimum rates a client may fall before it is cut: a silent client is closed this long after"
            + " its last byte (default: ${DEFAULT-VALUE}).")
    public long rateGraceMs;

    @Option(names = "--max-request-memory", paramLabel = "BYTES",
        description = "The most request bytes all connections may hold at once: heads beyond a connection's first KiB and contents"
            + " until their handler answers; a request that does not fit is answered 503 with Retry-After (default: a quarter of"
            + " the heap, -Xmx).")
    public Long maxRequestMemory;

    @Option(names = "--max-client-connections", paramLabel = "N", defaultValue = "" + ServerLimits.CLIENT_CONNECTIONS,
        description = "The most connections one client address may hold open; beyond, its new ones are refused (nginx's limit_conn;"
            + " --proxies are exempt) (default: ${DEFAULT-VALUE}).")
    public int maxClientConnections;

    @Option(names = "--max-client-streams", paramLabel = "N", defaultValue = "" + ServerLimits.CLIENT_STREAMS,
        description = "The most event streams one client address may hold open; beyond, 503 with Retry-After (--proxies are exempt)"
            + " (default: ${DEFAULT-VALUE}).")
    public int maxClientStreams;

    @Option(names = "--proxies", paramLabel = "ADDR", defaultValue = "127.0.0.1,::1",
        description = "IP addresses of the reverse proxies in front (nginx), comma-separated, or none: their connections carry many"
            + " clients, so the per-client limits do not apply to them (default: ${DEFAULT-VALUE}).")
    public String proxies;

    @Option(names = "--max-connections", paramLabel = "N",
        description = "Most connections open at once; beyond it new ones are answered 503 and closed (kilim) or wait in the listen backlog"
            + " (default: the open-files limit minus 64, now ${sys:kiln.maxConnections}, or fewer when the heap (-Xmx) cannot hold"
            + " that many: the server logs the cap and why at start).")
    public Integer maxConnections;

    @Option(names = "--max-content", paramLabel = "BYTES", defaultValue = "65536",
        description = "The most content bytes a request may have, held in memory while it is read; 413 beyond it"
            + " (default: ${DEFAULT-VALUE}, at most 16777216).")
    public int maxContentBytes;

    @Option(names = "--max-streams", paramLabel = "N",
        description = "The most streamed responses (server-sent events) open at once; beyond it 503 with Retry-After (default: what"
            + " the heap holds beside the request memory at the front end's bytes per stream, where that is below --max-connections).")
    public Integer maxStreams;

    @Option(names = "--cors", paramLabel = "ORIGIN", split = ",",
        description = "Let pages of ORIGIN (scheme://host[:port], or * for any) call this server from a browser: CORS, preflights"
            + " included; repeatable or comma-separated (default: none).")
    public List<String> corsOrigins = new ArrayList<>();

    @Option(names = "--access-log", paramLabel = "FILE", arity = "0..1", fallbackValue = "-",
        description = "Write one line per request (combined log format plus the request id) to FILE, appended, or to standard output"
            + " without FILE or with -; requests then get an X-Request-Id (default: off).")
    public String accessLog;

    @Option(names = "--auth-tokens", paramLabel = "FILE",
        description = "Require Authorization: Bearer TOKEN on the --auth-paths, TOKEN one of FILE's lines (each at least 16 characters;"
            + " blank lines and lines starting with # ignored); others get 401 (default: off).")
    public Path authTokens;

    @Option(names = "--auth-paths", paramLabel = "PATH", split = ",", defaultValue = "/metrics",
        description = "The paths --auth-tokens protects, each with what is below it; comma-separated (default: ${DEFAULT-VALUE}).")
    public List<String> authPaths;

    @Option(names = "--db-queue", paramLabel = "N", defaultValue = "16384",
        description = "Writes that may wait for the database's writer; beyond it a write is answered 503 with Retry-After: 1 (default: ${DEFAULT-VALUE}).")
    public int dbQueue;

    @Option(names = "--db-max-readers", paramLabel = "N", defaultValue = "1024",
        description = "LMDB's reader table: read transactions at once, in use and pooled, plus 8 left to other processes (a backup);"
            + " a read that finds every slot held waits up to 5 s, then is answered 503 (default: ${DEFAULT-VALUE}).")
    public int dbMaxReaders;

    @Option(names = "--db-deadline", paramLabel = "MS", defaultValue = "5000",
        description = "Answer a request 503 with Retry-After: 1 once it has waited this long for the database (a paused or cut-off"
            + " PostgreSQL, a commit waiting for a synchronous standby): a write still queued is withdrawn and not applied, one"
            + " begun may still commit and the answer says its outcome is unknown; 0: wait as long as it takes, 100..86400000"
            + " otherwise (default: ${DEFAULT-VALUE}).")
    public long dbDeadlineMs;

    @Option(names = "--backup", paramLabel = "DIR",
        description = "Do not serve: write a compacted copy of the --data database to DIR/data.mdb (DIR new or empty), print its size"
            + " and exit. Safe while a server runs on the same --data; run it as the server's user. Restore: stop the server,"
            + " put the copy's data.mdb in the data directory, start it.")
    public Path backup;

    @Option(names = "--no-metrics",
        description = "Serve without metrics: requests are neither counted nor timed and /metrics answers 404; for measuring what the metrics cost."
            + " (A program of your own picks its metrics where it builds its router.)")
    public boolean noMetrics;

    static {
        System.setProperty("kiln.cores", Integer.toString(Runtime.getRuntime().availableProcessors()));
        System.setProperty("kiln.maxConnections", Integer.toString(ServerLimits.defaultMaxConnections()));
    }

    /** @return {@link #threads}, or the number of cores when not given */
    public int threadsOrDefault() {
        return threads != null ? threads : Runtime.getRuntime().availableProcessors();
    }

    /** @return the server's metrics over {@code db}: {@link Metrics#create}, or {@link Metrics#off()} with {@code --no-metrics} */
    public Metrics metrics(kiln.db.Db db) {
        return noMetrics ? Metrics.off() : Metrics.create(db);
    }

    /** The longest {@code --db-deadline}: a day, as {@link kiln.db.Db.Builder#deadline} takes. */
    static final long MAX_DB_DEADLINE_MS = 86_400_000L;

    /** Heap kept for everything but connections and request memory (the endpoints, the database's caches, metrics), bytes. */
    static final long HEAP_RESERVE = 8L << 20;

    /**
     * The limits these options set, with the defaults derived where no flag was given, logged at
     * start: the request memory, a quarter of the heap ({@code -Xmx}); the connection cap, the
     * smaller of {@link ServerLimits#defaultMaxConnections()} (file descriptors) and what the heap
     * holds beside the request memory, ({@code -Xmx} minus {@value #HEAP_RESERVE} bytes minus the
     * request memory) / {@code heapBytesPerConnection}, at least 16; and the stream cap, the same
     * heap / {@code heapBytesPerStream}, at least 16, where that is below the connection cap. New
     * connections are refused at the cap and new streams answered 503 before the heap runs out, and
     * requests beyond the request memory with 503.
     *
     * @param heapBytesPerConnection the front end's heap per open connection, bytes: its measured
     *                               bytes per idle connection ({@code make bench-memory}) with room for
     *                               a request in progress (its first buffers)
     * @param heapBytesPerStream     the front end's heap per open streamed response (an event stream's
     *                               subscriber), bytes, its connection included: its measured bytes
     *                               per subscriber ({@code ./ab-sweep.sh --subscribers}) with room for
     *                               an event on its way
     */
    public ServerLimits limits(int heapBytesPerConnection, int heapBytesPerStream) {
        long heap = Runtime.getRuntime().maxMemory();
        ServerLimits l = ServerLimits.defaults().idleTimeout(idleTimeoutMs).headerTimeout(headerTimeoutMs).maxContent(maxContentBytes)
            .minRequestRate(minRequestRate).minResponseRate(minResponseRate).rateGrace(rateGraceMs)
            .maxClientConnections(maxClientConnections).maxClientStreams(maxClientStreams).proxies(ServerLimits.parseAddresses(proxies));
        if (maxStreams != null) l = l.maxStreams(maxStreams);
        if (maxRequestMemory != null) l = l.maxRequestMemory(maxRequestMemory);
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(ServerOptions.class.getName());
        long budget = heap - HEAP_RESERVE - l.maxRequestMemory();  // what connections and streams may hold
        if (maxConnections != null) {
            l = l.maxConnections(maxConnections);
        } else {
            int byFiles = ServerLimits.defaultMaxConnections();
            long byHeap = Math.max(16, budget / heapBytesPerConnection);
            l = l.maxConnections((int) Math.min(byFiles, byHeap));
            log.info("connection cap " + l.maxConnections() + ": "
                + (byHeap < byFiles ? "what a " + (heap >> 20) + " MB heap holds beside " + ServerLimits.megabytes(l.maxRequestMemory())
                    + " of request memory at " + heapBytesPerConnection + " bytes per connection (the open-files limit allows " + byFiles + ")"
                    : "the open-files limit minus 64 (the " + (heap >> 20) + " MB heap would hold " + byHeap + " beside "
                    + ServerLimits.megabytes(l.maxRequestMemory()) + " of request memory)")
                + "; set it with --max-connections");
        }
        long streamsByHeap = Math.max(16, budget / heapBytesPerStream);
        if (maxStreams == null && streamsByHeap < l.maxConnections()) {
            l = l.maxStreams((int) streamsByHeap);
            log.info("stream cap " + streamsByHeap + ": what a " + (heap >> 20) + " MB heap holds beside "
                + ServerLimits.megabytes(l.maxRequestMemory()) + " of request memory at " + heapBytesPerStream
                + " bytes per stream; set it with --max-streams");
        }
        log.info(l.describe());
        return l;
    }

    /** Checks ranges picocli's types do not express. */
    void validate(CommandLine cmd) {
        requireRange(cmd, "--port", port, 0, 65535, "");
        if (threads != null) requireRange(cmd, "--threads", threads, 1, 256, "");
        requireRange(cmd, "--idle-timeout", idleTimeoutMs, 1, Integer.MAX_VALUE, " ms");
        requireRange(cmd, "--header-timeout", headerTimeoutMs, 1, Integer.MAX_VALUE, " ms");
        requireRange(cmd, "--db-queue", dbQueue, 1, Long.MAX_VALUE, "");
        requireRange(cmd, "--db-max-readers", dbMaxReaders, 16, 1 << 20, "");
        if (dbDeadlineMs != 0 && (dbDeadlineMs < 100 || dbDeadlineMs > MAX_DB_DEADLINE_MS)) {
            throw new CommandLine.ParameterException(cmd, "--db-deadline must be 0 (none) or 100.." + MAX_DB_DEADLINE_MS + " ms, got " + dbDeadlineMs);
        }
        if (maxConnections != null) requireRange(cmd, "--max-connections", maxConnections, 1, Long.MAX_VALUE, "");
        requireRange(cmd, "--max-content", maxContentBytes, 0, kiln.http.Limits.MAX_CONTENT_CEILING, " bytes");
        if (maxStreams != null) requireRange(cmd, "--max-streams", maxStreams, 0, Integer.MAX_VALUE, "");
        requireRange(cmd, "--min-request-rate", minRequestRate, 0, Integer.MAX_VALUE, " bytes/s");
        requireRange(cmd, "--min-response-rate", minResponseRate, 0, Integer.MAX_VALUE, " bytes/s");
        requireRange(cmd, "--min-rate-grace", rateGraceMs, 1, Integer.MAX_VALUE, " ms");
        if (maxRequestMemory != null) requireRange(cmd, "--max-request-memory", maxRequestMemory, 1, Long.MAX_VALUE, " bytes");
        requireRange(cmd, "--max-client-connections", maxClientConnections, 1, Integer.MAX_VALUE, "");
        requireRange(cmd, "--max-client-streams", maxClientStreams, 0, Integer.MAX_VALUE, "");
        try {
            ServerLimits.parseAddresses(proxies);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(cmd, "--proxies: " + e.getMessage());
        }
        ServerLimits content = ServerLimits.defaults().maxContent(maxContentBytes);
        long memory = maxRequestMemory != null ? maxRequestMemory : content.maxRequestMemory();
        if (memory < content.largestRequest()) {
            throw new CommandLine.ParameterException(cmd, "--max-request-memory " + memory + (maxRequestMemory == null ? " (a quarter of -Xmx)" : "")
                + " cannot hold one request of --max-content " + maxContentBytes + " (" + content.largestRequest()
                + " bytes with its head and chunk framing): raise it, or -Xmx, or lower --max-content");
        }
        if (db == null && data.toString().contains("?")) {
            throw new CommandLine.ParameterException(cmd, "--data must not contain '?' (it would begin lmdb:'s parameters), got '" + data + "'");
        }
        try {
            kiln.db.KvEngines.check(databaseUrl());
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(cmd, (db != null ? "--db: " : "--data: ") + e.getMessage());
        }
        if (db != null && backup != null) {
            throw new CommandLine.ParameterException(cmd, "--backup copies an LMDB --data directory; a PostgreSQL database is backed up"
                + " by PostgreSQL (pg_basebackup or pg_dump; docs/scaling.md)");
        }
    }

    /** @return {@link #db}, else LMDB in {@link #data} with {@link #dbMaxReaders} reader slots */
    String databaseUrl() {
        return db != null ? db : "lmdb:" + data + "?maxReaders=" + dbMaxReaders;
    }

    /**
     * @return a builder of the database these options name ({@link #databaseUrl}), opened by
     *         {@link kiln.db.KvEngines} when the builder opens, with the writer's queue and the deadline as given
     */
    public kiln.db.Db.Builder database() {
        String url = databaseUrl();
        java.util.logging.Logger.getLogger(ServerOptions.class.getName()).info("database: " + kiln.db.KvEngines.redact(url));
        return kiln.db.Db.builder(url).queueCapacity(dbQueue).deadline(java.time.Duration.ofMillis(dbDeadlineMs));
    }

    /**
     * @param max the largest allowed value, or {@link Long#MAX_VALUE} for no upper bound
     * @throws CommandLine.ParameterException "OPTION must be MIN..MAX[UNIT], got VALUE" (or "must be at
     *         least MIN") when {@code value} is outside
     */
    private static void requireRange(CommandLine cmd, String option, long value, long min, long max, String unit) {
        if (value < min || value > max) {
            String range = max == Long.MAX_VALUE ? "at least " + min : min + ".." + max + unit;
            throw new CommandLine.ParameterException(cmd, option + " must be " + range + ", got " + value);
        }
    }

    /**
     * Parses {@code args} into {@code command} (a picocli {@code @Command} object holding a
     * {@code @Mixin ServerOptions}). Prints the usage and exits 0 on {@code --help}; prints the
     * error and the usage to stderr and exits 2 on a bad option.
     *
     * @param endpoints the served endpoints, one per line, for the usage's footer (e.g. the demo's
     *                  {@code Endpoints.usage()})
     * @return the parsed ServerOptions of {@code command}
     */
    public static ServerOptions parseOrExit(Object command, String endpoints, String[] args) {
        return parseOrExit(command, endpoints, args, new Object[0]);
    }

    /**
     * As {@link #parseOrExit(Object, String, String[])}, with more options: each of {@code mixins} is
     * a picocli mixin (an object with {@code @Option} fields, e.g. the demo's {@code --app}) whose
     * fields are set from {@code args} too.
     */
    public static ServerOptions parseOrExit(Object command, String endpoints, String[] args, Object... mixins) {
        CommandLine cmd = new CommandLine(command);
        for (int i = 0; i < mixins.length; i++) cmd.addMixin("extra" + i, mixins[i]);
        cmd.getCommandSpec().usageMessage().footer("%nEndpoints:%n" + endpoints.replace("%", "%%"));
        return parseOrExit(cmd, args);
    }

    /**
     * As {@link #parseOrExit(Object, String, String[])}, for a program of your own that serves its own routes:
     * {@code name} and {@code description} replace the command's, the usage lists no endpoints, and
     * each of {@code appOptions} (an object with picocli {@code @Option} fields: the app's own flags)
     * is set from {@code args} and listed by {@code --help} with the server's.
     */
    public static ServerOptions parseOrExit(Object command, String name, String description, String[] args, Object... appOptions) {
        CommandLine cmd = new CommandLine(command).setCommandName(name);
        for (int i = 0; i < appOptions.length; i++) cmd.addMixin("app" + i, appOptions[i]);
        cmd.getCommandSpec().usageMessage().description(description.replace("%", "%%"));
        return parseOrExit(cmd, args);
    }

    private static ServerOptions parseOrExit(CommandLine cmd, String[] args) {
        try {
            CommandLine.ParseResult parsed = cmd.parseArgs(args);
            if (parsed.isUsageHelpRequested()) {
                cmd.usage(System.out);
                System.exit(0);
            }
            ServerOptions options = null;
            for (Object mixin : cmd.getMixins().values()) {
                if (mixin instanceof ServerOptions) options = (ServerOptions) mixin;
            }
            if (options == null) throw new IllegalArgumentException(cmd.getCommandName() + " has no @Mixin ServerOptions");
            options.validate(cmd);
            return options;
        } catch (CommandLine.ParameterException e) {
            System.err.println(cmd.getCommandName() + ": " + e.getMessage());
            cmd.usage(System.err);
            System.exit(2);
            return null;
        }
    }

    /** A bare command holding only these options, for {@link #of}. */
    @CommandLine.Command(name = "kiln")
    private static final class Bare {
        @CommandLine.Mixin
        ServerOptions options;
    }

    /**
     * Parses these options alone, for a server embedded in a test or another program.
     *
     * @param args e.g. {@code "--port", "0", "--bind", "127.0.0.1"}; the rest take their defaults
     * @return the options
     * @throws CommandLine.ParameterException on an unknown option or a bad value
     */
    public static ServerOptions of(String... args) {
        Bare bare = new Bare();
        CommandLine cmd = new CommandLine(bare);
        cmd.parseArgs(args);
        bare.options.validate(cmd);
        return bare.options;
    }

    /** Prints {@code message} to stderr as the program's fatal error and exits 1. */
    public static void fail(String program, String message) {
        System.err.println(program + ": error: " + message);
        System.exit(1);
    }

    /**
     * Applies the options that are the request pipeline's to {@code router}: its {@code limits}
     * ({@link AbstractRouter#limits}: the stream cap, the per-client shares, the request memory),
     * and the middleware the options turn on, outside any filter the router has already: a
     * {@link RequestId} and the {@link AccessLog} ({@code --access-log}), {@link Cors}
     * ({@code --cors}), {@link Authentication} ({@code --auth-tokens}, {@code --auth-paths}).
     *
     * @return {@code router}
     * @throws IllegalArgumentException when the access log or the tokens file cannot be opened or read, or a
     *                                  CORS origin or a path is malformed (the message names the option)
     */
    public <H, R extends AbstractRouter<H, R>> R applyTo(R router, ServerLimits limits) {
        router.limits(limits);
        List<Filter> outer = new ArrayList<>();
        if (accessLog != null) {
            outer.add(new RequestId());
            try {
                outer.add(accessLog.equals("-") ? AccessLog.toStandardOutput() : AccessLog.toFile(Path.of(accessLog)));
            } catch (IOException e) {
                throw new IllegalArgumentException("--access-log " + accessLog + ": cannot open it for appending: " + e.getMessage(), e);
            }
        }
        if (!corsOrigins.isEmpty()) outer.add(named("--cors", () -> Cors.allow(corsOrigins)));
        if (authTokens != null) {
            Authentication bearer = named("--auth-tokens " + authTokens, () -> Authentication.bearerTokens("kiln", readTokens(authTokens)));
            outer.add(named("--auth-paths", () -> bearer.on(authPaths.toArray(new String[0]))));
        }
        router.wrap(outer);
        return router;
    }

    /** @return what {@code make} makes; its IllegalArgumentException's message prefixed with {@code option} */
    private static <T> T named(String option, java.util.function.Supplier<T> make) {
        try {
            return make.get();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + e.getMessage(), e);
        }
    }

    /** @return the tokens of a file, one per line, blank lines and {@code #} comments skipped */
    private static List<String> readTokens(Path file) {
        List<String> tokens = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(file)) {
                String t = line.strip();
                if (!t.isEmpty() && !t.startsWith("#")) tokens.add(t);
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the tokens: " + e, e);
        }
        return tokens;
    }
}

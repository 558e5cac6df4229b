package kiln.server;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Command-line options of the front ends that run on a conventional server (Jetty, Undertow) and
 * come in several threading models. Declare it beside {@link ServerOptions}:
 * {@code @Mixin ServerOptions server; @Mixin ModeOptions mode;}. A front end without
 * {@link Mode#LOOM} calls {@link #refuseLoom} after parsing.
 */
public final class ModeOptions {
    /** Most worker threads {@code --workers} accepts: the benchmark sweeps 1..3 on a 2-core machine. */
    public static final int MAX_WORKERS = 3;

    /** The threading model. */
    public enum Mode {
        /** Requests are queued to {@link #workers} threads that never block; waits end in callbacks. */
        ASYNC,
        /** Each request holds a server pool thread, which blocks on the database and sleeps (the baseline). */
        BLOCKING,
        /** Each request runs on its own virtual thread, which blocks like the baseline (JDK 21+; Jetty only). */
        LOOM
    }

    @Option(names = "--mode", paramLabel = "MODE", defaultValue = "async", converter = ModeConverter.class,
        description = "async: queue each request to --workers threads that never block;"
            + " blocking: run each request on the server's thread pool, blocking on the database;"
            + " loom (Jetty, JDK 21+): run each request on a virtual thread, blocking (default: ${DEFAULT-VALUE}).")
    public Mode mode;

    @Option(names = "--workers", paramLabel = "N", defaultValue = "1", converter = WorkersConverter.class,
        description = "Worker threads that serve the request queue in async mode, 1.." + MAX_WORKERS + " (default: ${DEFAULT-VALUE}).")
    public int workers;

    /** For a front end without virtual threads: {@code --mode loom} is a usage error (exit 2, one line). */
    public void refuseLoom(String program) {
        if (mode != Mode.LOOM) return;
        System.err.println(program + ": --mode loom is not available here; choose async or blocking");
        System.exit(2);
    }

    /** {@code --mode}: the lower-case names {@code async} and {@code blocking}. */
    static final class ModeConverter implements CommandLine.ITypeConverter<Mode> {
        @Override
        public Mode convert(String value) {
            switch (value) {
                case "async": return Mode.ASYNC;
                case "blocking": return Mode.BLOCKING;
                case "loom": return Mode.LOOM;
                default: throw new CommandLine.TypeConversionException("expected async, blocking or loom, got '" + value + "'");
            }
        }
    }

    /** {@code --workers}: an integer 1..{@value #MAX_WORKERS}. */
    static final class WorkersConverter implements CommandLine.ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            int n;
            try {
                n = Integer.parseInt(value.trim());
            } catch (NumberFormatException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not an integer");
            }
            if (n < 1 || n > MAX_WORKERS) throw new CommandLine.TypeConversionException("must be 1.." + MAX_WORKERS + ", got " + n);
            return n;
        }
    }
}

package kiln.app;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Command-line options of the front ends that run on a conventional server (Jetty, Undertow) and
 * come in two threading models. Declare it beside {@link ServerOptions}:
 * {@code @Mixin ServerOptions server; @Mixin ModeOptions mode;}.
 */
public final class ModeOptions {
    /** Most worker threads {@code --workers} accepts: the benchmark sweeps 1..3 on a 2-core machine. */
    public static final int MAX_WORKERS = 3;

    /** The threading model. */
    public enum Mode {
        /** Requests are queued to {@link #workers} threads that never block; waits end in callbacks. */
        ASYNC,
        /** Each request holds a server pool thread, which blocks on the database and sleeps (the baseline). */
        BLOCKING
    }

    @Option(names = "--mode", paramLabel = "MODE", defaultValue = "async", converter = ModeConverter.class,
        description = "async: queue each request to --workers threads that never block;"
            + " blocking: run each request on the server's thread pool, blocking on the database (default: ${DEFAULT-VALUE}).")
    public Mode mode;

    @Option(names = "--workers", paramLabel = "N", defaultValue = "1", converter = WorkersConverter.class,
        description = "Worker threads that serve the request queue in async mode, 1.." + MAX_WORKERS + " (default: ${DEFAULT-VALUE}).")
    public int workers;

    /** {@code --mode}: the lower-case names {@code async} and {@code blocking}. */
    static final class ModeConverter implements CommandLine.ITypeConverter<Mode> {
        @Override
        public Mode convert(String value) {
            switch (value) {
                case "async": return Mode.ASYNC;
                case "blocking": return Mode.BLOCKING;
                default: throw new CommandLine.TypeConversionException("expected async or blocking, got '" + value + "'");
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

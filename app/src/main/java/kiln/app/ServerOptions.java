package kiln.app;

import java.nio.file.Path;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Command-line options every front end shares. A front end declares its own picocli
 * {@code @Command} class with {@code @Mixin ServerOptions server} (plus options of its own) and
 * calls {@link #parseOrExit}.
 */
public final class ServerOptions {
    @Option(names = "--port", paramLabel = "N", defaultValue = "8080",
        description = "TCP port to listen on; 0 picks a free port (default: ${DEFAULT-VALUE}).")
    public int port;

    @Option(names = "--bind", paramLabel = "ADDR", defaultValue = "0.0.0.0",
        description = "Address to listen on: 0.0.0.0 for every interface, 127.0.0.1 for this machine only (default: ${DEFAULT-VALUE}).")
    public String bind;

    @Option(names = "--data", paramLabel = "DIR", defaultValue = "data",
        description = "LMDB data directory, created and filled with the demo tables on first start (default: ./${DEFAULT-VALUE}).")
    public Path data;

    @Option(names = "--threads", paramLabel = "N",
        description = "Carrier (worker) threads that run handlers; default: the number of CPU cores (${sys:kiln.cores}).")
    public Integer threads;

    static {
        System.setProperty("kiln.cores", Integer.toString(Runtime.getRuntime().availableProcessors()));
    }

    /** @return {@link #threads}, or the number of cores when not given */
    public int threadsOrDefault() {
        return threads != null ? threads : Runtime.getRuntime().availableProcessors();
    }

    /** Checks ranges picocli's types do not express. */
    void validate(CommandLine cmd) {
        if (port < 0 || port > 65535) {
            throw new CommandLine.ParameterException(cmd, "--port must be 0..65535, got " + port);
        }
        if (threads != null && (threads < 1 || threads > 256)) {
            throw new CommandLine.ParameterException(cmd, "--threads must be 1..256, got " + threads);
        }
    }

    /**
     * Parses {@code args} into {@code command} (a picocli {@code @Command} object holding a
     * {@code @Mixin ServerOptions}). Prints the usage and exits 0 on {@code --help}; prints the
     * error and the usage to stderr and exits 2 on a bad option.
     *
     * @return the parsed ServerOptions of {@code command}
     */
    public static ServerOptions parseOrExit(Object command, String[] args) {
        CommandLine cmd = new CommandLine(command);
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
            if (options == null) throw new IllegalArgumentException(command.getClass() + " has no @Mixin ServerOptions");
            options.validate(cmd);
            return options;
        } catch (CommandLine.ParameterException e) {
            System.err.println(cmd.getCommandName() + ": " + e.getMessage());
            cmd.usage(System.err);
            System.exit(2);
            return null;
        }
    }

    /** Prints {@code message} to stderr as the program's fatal error and exits 1. */
    public static void fail(String program, String message) {
        System.err.println(program + ": error: " + message);
        System.exit(1);
    }
}

package kiln.conformance;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One front end running as a child process, started the way the contract says a user starts it:
 * {@code java -Xms128m -Xmx256m -XX:+ExitOnOutOfMemoryError <lmdb flags> -jar <jar> --port 0 --bind 127.0.0.1 --data <dir> [extra]}.
 *
 * <p>Ready when it prints {@code kiln-<frontend> listening on http://127.0.0.1:PORT/} (within
 * {@link #START_TIMEOUT_S} s). Its stdout and stderr go to a log file under target/server-logs.
 * {@link #stop} sends SIGTERM and SIGKILL only if it has not exited after {@link #STOP_TIMEOUT_S} s;
 * {@link #kill} sends SIGKILL at once. Signals go through {@link ProcessHandle}, not
 * {@link Process#destroy}: the latter also closes the pipes at once, losing what the server logs
 * while it shuts down.
 */
final class ServerProcess implements AutoCloseable {
    static final int START_TIMEOUT_S = 30;
    static final int STOP_TIMEOUT_S = 15;
    static final String BIND = "127.0.0.1";

    /** The same flags the Makefile and the contract give lmdbjava on JDK 17 (FACTS.md). */
    private static final List<String> LMDB_FLAGS = List.of(
        "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED");

    final FrontEnd frontEnd;
    final Path dataDir;
    final Path log;
    final int port;
    private final Process process;
    private final LogSink sink;
    private final List<Thread> drains;
    private boolean neededSigkill;

    private ServerProcess(FrontEnd frontEnd, Path dataDir, Path log, Process process, LogSink sink, List<Thread> drains, int port) {
        this.frontEnd = frontEnd;
        this.dataDir = dataDir;
        this.log = log;
        this.process = process;
        this.sink = sink;
        this.drains = drains;
        this.port = port;
    }

    /**
     * Starts {@code fe} on a fresh data directory under target/server-data.
     *
     * @param name distinguishes this run's log and data directory, e.g. the test class
     * @throws AssertionError if the jar is missing, or the server exits or stays silent instead of
     *         printing its ready line (the message holds its log)
     */
    static ServerProcess start(FrontEnd fe, String name) {
        return start(fe, name, List.of());
    }

    /** As {@link #start(FrontEnd, String)}, with {@code args} after the front end's own (e.g. limits). */
    static ServerProcess start(FrontEnd fe, String name, List<String> args) {
        return start(fe, name, List.of(), args);
    }

    /** As {@link #start(FrontEnd, String, List)}, with {@code jvmArgs} after the default ones (a later -Xmx wins). */
    static ServerProcess start(FrontEnd fe, String name, List<String> jvmArgs, List<String> args) {
        checkBuilt(fe);
        Path dataDir;
        try {
            Files.createDirectories(Dirs.data());
            dataDir = Files.createTempDirectory(Dirs.data(), name + "-" + fe.id + "-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            return start(fe, dataDir, name, jvmArgs, args);
        } catch (AssertionError e) {
            deleteRecursively(dataDir);
            throw e;
        }
    }

    private static void checkBuilt(FrontEnd fe) {
        if (!fe.built()) {
            throw new AssertionError("front end '" + fe.id + "': " + fe.jarPath() + " does not exist: run mvn package first"
                + " (e.g. mvn -B -q -pl " + fe.module + " -am package -DskipTests)");
        }
    }

    /** Starts {@code fe} on {@code dataDir}, which may already hold a database. See {@link #start(FrontEnd, String)}. */
    static ServerProcess start(FrontEnd fe, Path dataDir, String name) {
        return start(fe, dataDir, name, List.of());
    }

    /** Starts {@code fe} on {@code dataDir} with {@code args} after the front end's own. */
    static ServerProcess start(FrontEnd fe, Path dataDir, String name, List<String> args) {
        return start(fe, dataDir, name, List.of(), args);
    }

    /** As {@link #start(FrontEnd, Path, String, List)}, with {@code jvmArgs} after the default ones (a later -Xmx wins). */
    static ServerProcess start(FrontEnd fe, Path dataDir, String name, List<String> jvmArgs, List<String> args) {
        checkBuilt(fe);
        List<String> cmd = command(fe, dataDir, args);
        cmd.addAll(cmd.indexOf("-jar"), jvmArgs);

        Path log;
        LogSink sink;
        Process process;
        try {
            Files.createDirectories(Dirs.logs());
            log = Dirs.logs().resolve(name + "-" + fe.id + ".log");
            sink = new LogSink(Files.newBufferedWriter(log, StandardCharsets.UTF_8));
            sink.line("# " + String.join(" ", cmd));
            process = new ProcessBuilder(cmd).directory(Dirs.target().toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + fe.id, e);
        }
        closeQuietly(process.getOutputStream());
        CompletableFuture<Integer> ready = new CompletableFuture<>();
        Pattern readyLine = Pattern.compile(Pattern.quote(fe.program() + " listening on http://" + BIND + ":") + "(\\d+)/");
        List<Thread> drains = List.of(
            drain(fe.id + "-stdout", process.getInputStream(), sink, "", line -> {
                Matcher m = readyLine.matcher(line);
                if (m.matches()) {
                    ready.complete(Integer.parseInt(m.group(1)));
                } else if (line.startsWith("kiln-") && line.contains(" listening on ") && !ready.isDone()) {
                    ready.completeExceptionally(new AssertionError("ready line is not of the form '" + readyLine.pattern() + "': " + line));
                }
            }, () -> ready.completeExceptionally(new AssertionError("stdout closed before the ready line"))),
            drain(fe.id + "-stderr", process.getErrorStream(), sink, "stderr| ", line -> { }, () -> { }));

        int port;
        try {
            port = ready.get(START_TIMEOUT_S, TimeUnit.SECONDS);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            if (e instanceof InterruptedException) Thread.currentThread().interrupt();
            process.toHandle().destroyForcibly();
            waitQuietly(process, 10);
            joinQuietly(drains);
            sink.close();
            String why = e instanceof TimeoutException ? "printed no ready line within " + START_TIMEOUT_S + " s"
                : e instanceof ExecutionException ? e.getCause().getMessage() : e.toString();
            throw new AssertionError("front end '" + fe.id + "' did not start: " + why
                + (process.isAlive() ? "" : " (exit code " + process.exitValue() + ")")
                + "\n--- " + log + " ---\n" + read(log));
        }
        return new ServerProcess(fe, dataDir, log, process, sink, drains, port);
    }

    /**
     * @return the command line that runs {@code fe} on a free loopback port over {@code dataDir},
     *         with {@code args} after the front end's own
     */
    static List<String> command(FrontEnd fe, Path dataDir, List<String> args) {
        List<String> cmd = new ArrayList<>();
        String java = fe.javaBinary();
        cmd.add(java);
        cmd.add("-Xms128m");
        cmd.add("-Xmx256m");
        cmd.add("-XX:+ExitOnOutOfMemoryError");
        cmd.addAll(LMDB_FLAGS);
        // lmdbjava's Unsafe and native access warn on stderr from JDK 22/23 on (FACTS.md); a
        // server's stderr is part of what the suite checks (one-line errors), so allow them.
        int feature = FrontEnd.featureOf(java);
        if (feature >= 22) cmd.add("--enable-native-access=ALL-UNNAMED");
        if (feature >= 23) cmd.add("--sun-misc-unsafe-memory-access=allow");
        cmd.add("-jar");
        cmd.add(fe.jarPath().toString());
        cmd.addAll(List.of("--port", "0", "--bind", BIND, "--data", dataDir.toString()));
        cmd.addAll(fe.extraArgs);
        cmd.addAll(args);
        return cmd;
    }

    /** @return {@code http://127.0.0.1:PORT} + {@code target} (a path with optional query) */
    URI uri(String target) {
        return URI.create("http://" + BIND + ":" + port + target);
    }

    /** @return the server's process id */
    long pid() {
        return process.pid();
    }

    /** @return how many file descriptors the server has open now ({@code /proc/PID/fd}, Linux) */
    int openFileDescriptors() {
        try (java.util.stream.Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(process.pid()), "fd"))) {
            return (int) fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the descriptors of " + frontEnd.id + " (pid " + process.pid() + ")", e);
        }
    }

    /** @return true while the process runs */
    boolean alive() {
        return process.isAlive();
    }

    /** @return true if the last {@link #stop} had to fall back to SIGKILL */
    boolean neededSigkill() {
        return neededSigkill;
    }

    /**
     * Graceful stop: SIGTERM, then SIGKILL if still running after {@link #STOP_TIMEOUT_S} s.
     *
     * @return the exit code (143 = died of SIGTERM without handling it, 137 = SIGKILL)
     */
    int stop() {
        if (process.isAlive()) {
            process.toHandle().destroy();
            if (!waitQuietly(process, STOP_TIMEOUT_S)) {
                neededSigkill = true;
                process.toHandle().destroyForcibly();
                waitQuietly(process, 10);
            }
        }
        return finish();
    }

    /** Sends SIGTERM and returns at once; {@link #stop} then waits for the exit. */
    void signalTerm() {
        process.toHandle().destroy();
    }

    /** Crash: SIGKILL at once. @return the exit code (137) */
    int kill() {
        process.toHandle().destroyForcibly();
        waitQuietly(process, 10);
        return finish();
    }

    private int finish() {
        joinQuietly(drains);
        sink.close();
        return process.isAlive() ? -1 : process.exitValue();
    }

    /** @return the log so far */
    String logText() {
        sink.flush();
        return read(log);
    }

    /** Stops the server (SIGTERM, then SIGKILL) and deletes its data directory. */
    @Override
    public void close() {
        stop();
        deleteRecursively(dataDir);
    }

    static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) return;
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path log) {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }

    /** The servers read nothing from stdin; closing it tells them so. */
    private static void closeQuietly(java.io.OutputStream stdin) {
        try {
            stdin.close();
        } catch (IOException ignored) {
            // nothing to do: the process never reads it
        }
    }

    private static boolean waitQuietly(Process p, int seconds) {
        try {
            return p.waitFor(seconds, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !p.isAlive();
        }
    }

    /** Output readers end at EOF once the process is gone; bounded in case a grandchild held a pipe. */
    private static void joinQuietly(List<Thread> threads) {
        for (Thread t : threads) {
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private interface LineListener {
        void line(String line);
    }

    private static Thread drain(String name, InputStream in, LogSink sink, String prefix, LineListener listener, Runnable atEof) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    sink.line(prefix + line);
                    listener.line(line);
                }
            } catch (IOException e) {
                sink.line("# reading " + name + " failed: " + e);
            } finally {
                atEof.run();
            }
        }, "drain-" + name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The log file, shared by the stdout and stderr readers; flushed per line so a failure can print it. */
    private static final class LogSink {
        private final Writer out;
        private boolean closed;

        LogSink(Writer out) {
            this.out = out;
        }

        synchronized void line(String line) {
            if (closed) return;
            try {
                out.write(line);
                out.write('\n');
                out.flush();
            } catch (IOException e) {
                closed = true;
            }
        }

        synchronized void flush() {
            if (closed) return;
            try {
                out.flush();
            } catch (IOException e) {
                closed = true;
            }
        }

        synchronized void close() {
            if (closed) return;
            closed = true;
            try {
                out.close();
            } catch (IOException ignored) {
                // the log is best effort; the test's own assertion carries the failure
            }
        }
    }
}

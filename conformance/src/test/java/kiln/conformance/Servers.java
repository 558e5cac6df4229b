package kiln.conformance;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * The servers one test class shares: each front end is started on first use (fresh data directory)
 * and stopped after the class's last test, so a class costs one process start per front end.
 * Register it as {@code @RegisterExtension static final Servers SERVERS = new Servers("Name");},
 * with any further command-line arguments after the name.
 *
 * <p>When a test fails, the log of the front end it ran against is printed. After the class, a
 * server that died during the tests, or that needed SIGKILL to stop, fails the class.
 */
final class Servers implements AfterAllCallback, TestWatcher {
    private final String owner;
    private final List<String> args;
    private List<String> jvmArgs = List.of();
    /** Start a fresh server in place of one that died, so that each test measures on its own ({@link #restartingTheDead}). */
    private boolean restartDead;
    /** Fail the class when Kilim's blocked-carrier checker warned about any handler ({@link #withQuietCarriers}). */
    private boolean quietCarriers;
    /** Servers that died during a test and were started again: each fails the class at the end. */
    private final List<String> deaths = new ArrayList<>();
    private final Map<FrontEnd, ServerProcess> running = new LinkedHashMap<>();
    /** A start that failed is not retried for every test of the class: each one fails with the same error. */
    private final Map<FrontEnd, AssertionError> failedStarts = new LinkedHashMap<>();

    Servers(String owner, String... args) {
        this.owner = owner;
        this.args = List.of(args);
    }

    /**
     * Starts the servers with {@code make demo}'s JVM flags ({@code deploy/jvm.options}: its heap,
     * collector and exit on OutOfMemoryError) instead of the suite's own.
     *
     * @return this
     */
    Servers withDemoJvmFlags() {
        return withDemoJvmFlags(new String[0]);
    }

    /**
     * As {@link #withDemoJvmFlags()}, with {@code more} flags after them (a later flag wins).
     *
     * @return this
     */
    Servers withDemoJvmFlags(String... more) {
        List<String> flags = new ArrayList<>(List.of("@" + Dirs.repo().resolve("deploy/jvm.options")));
        flags.addAll(List.of(more));
        jvmArgs = flags;
        return this;
    }

    /**
     * A test after one that killed its server gets a fresh server instead of failing at once (the
     * death still fails the test that caused it, and the class at the end): every test of the class
     * then says what it found on its own, as an attack suite's table needs.
     *
     * @return this
     */
    Servers restartingTheDead() {
        restartDead = true;
        return this;
    }

    /**
     * After the class, a server whose log has a warning of Kilim's blocked-carrier checker ("has
     * held carrier thread") fails the class: a fresh JVM walked through the demo or the board must
     * not teach its user to ignore that warning with a false alarm on a first request.
     *
     * @return this
     */
    Servers withQuietCarriers() {
        quietCarriers = true;
        return this;
    }

    /** @return {@code fe}, started if this is its first use in the class */
    synchronized ServerProcess get(FrontEnd fe) {
        ServerProcess s = running.get(fe);
        if (s != null && !s.alive() && restartDead) {
            int exit = s.stop();
            deaths.add(fe.id + " died (exit code " + exit + "); log " + s.log + ":\n" + tail(s.logText(), 30));
            running.remove(fe);
            s = null;
        }
        if (s != null) {
            if (!s.alive()) throw new AssertionError(fe.id + " is no longer running\n--- " + s.log + " ---\n" + s.logText());
            return s;
        }
        AssertionError failed = failedStarts.get(fe);
        if (failed != null) throw new AssertionError("front end '" + fe.id + "' failed to start earlier in " + owner, failed);
        try {
            s = ServerProcess.start(fe, owner, jvmArgs, args);
        } catch (AssertionError e) {
            failedStarts.put(fe, e);
            throw e;
        }
        running.put(fe, s);
        return s;
    }

    @Override
    public void testFailed(ExtensionContext context, Throwable cause) {
        // Parameterized tests here are named "<front end> ...": print that one's log, else all of them.
        String first = context.getDisplayName().split(" ", 2)[0];
        List<ServerProcess> logs = new ArrayList<>();
        synchronized (this) {
            for (ServerProcess s : running.values()) {
                if (s.frontEnd.id.equals(first)) logs = List.of(s);
            }
            if (logs.isEmpty()) logs = new ArrayList<>(running.values());
        }
        for (ServerProcess s : logs) {
            System.out.println("--- " + context.getDisplayName() + " failed; log of " + s.frontEnd.id + ": " + s.log + " ---");
            System.out.println(tail(s.logText(), 80));
        }
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) {
        List<String> problems = new ArrayList<>(deaths);
        deaths.clear();
        for (ServerProcess s : running.values()) {
            if (quietCarriers) {
                List<String> warned = s.logText().lines().filter(l -> l.contains("has held carrier thread")).toList();
                if (!warned.isEmpty()) problems.add(s.frontEnd.id + " warned of a blocked carrier in " + owner + ":\n"
                    + String.join("\n", warned) + "\nlog " + s.log + ":\n" + tail(s.logText(), 60));
            }
            boolean diedEarly = !s.alive();
            int exit = s.stop();
            if (diedEarly) {
                problems.add(s.frontEnd.id + " died during " + owner + " (exit code " + exit + "); log " + s.log + ":\n" + tail(s.logText(), 80));
            } else if (s.neededSigkill()) {
                problems.add(s.frontEnd.id + " did not exit within " + ServerProcess.STOP_TIMEOUT_S + " s of SIGTERM; log " + s.log);
            } else {
                ServerProcess.deleteRecursively(s.dataDir);
            }
        }
        running.clear();
        if (!problems.isEmpty()) throw new AssertionError(String.join("\n", problems));
    }

    private static String tail(String text, int lines) {
        String[] all = text.split("\n", -1);
        if (all.length <= lines) return text;
        return "(...)\n" + String.join("\n", java.util.Arrays.copyOfRange(all, all.length - lines, all.length));
    }
}

package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpServer;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * deploy/systemd/kiln.service: systemd accepts it ({@code systemd-analyze verify}, where that
 * command works: it is skipped, saying why, where it does not), its ExecStart starts a server that
 * answers and stops cleanly on SIGTERM, and it agrees with deploy/nginx/ on the port and timeouts.
 */
class SystemdUnitTest {
    private static final Path UNIT = Dirs.repo().resolve("deploy/systemd/kiln.service");
    private static final Path BACKUP_UNIT = Dirs.repo().resolve("deploy/systemd/kiln-backup.service");
    private static final Path BACKUP_TIMER = Dirs.repo().resolve("deploy/systemd/kiln-backup.timer");
    private static final Path NGINX_SITE = Dirs.repo().resolve("deploy/nginx/kiln.conf");
    private static final Path PROBE_UNIT = Dirs.repo().resolve("deploy/systemd/kiln-healthcheck.service");
    private static final Path PROBE_TIMER = Dirs.repo().resolve("deploy/systemd/kiln-healthcheck.timer");
    /** make demo's JVM flags (a Java argument file), and where the unit expects them installed. */
    private static final Path JVM_OPTIONS = Dirs.repo().resolve("deploy/jvm.options");
    private static final String INSTALLED_JVM_OPTIONS = "/opt/kiln/jvm.options";

    /** @return the unit's ExecStart, continuation lines joined, split into words */
    private static List<String> execStart() throws IOException {
        return new ArrayList<>(Arrays.asList(setting(UNIT, "ExecStart").split("\\s+")));
    }

    /** @return the value of {@code key} in {@code unit}, continuation lines joined */
    private static String setting(Path unit, String key) throws IOException {
        String text = Files.readString(unit).replace("\\\n", " ");
        Matcher m = Pattern.compile("(?m)^" + key + "=(.*)$").matcher(text);
        assertTrue(m.find(), "no " + key + " in " + unit);
        return m.group(1).trim();
    }

    private static String option(List<String> words, String name) {
        int i = words.indexOf(name);
        return i < 0 || i + 1 >= words.size() ? null : words.get(i + 1);
    }

    @Test
    void systemdAnalyzeVerifyAcceptsTheUnitWithoutAWarning() throws Exception {
        Command control;
        Path dir = Files.createDirectories(Dirs.target().resolve("systemd-test"));
        Path good = dir.resolve("control.service");
        Files.writeString(good, "[Unit]\nDescription=control\n[Service]\nExecStart=/bin/true\n");
        try {
            control = Command.run(60, List.of("systemd-analyze", "verify", good.toString()));
        } catch (IOException e) {
            System.out.println("SystemdUnitTest: skipped systemd-analyze verify: the command is not installed (apt-get install systemd): " + e.getMessage());
            Assumptions.abort("systemd-analyze is not installed: " + e.getMessage());
            return;
        }
        if (control.exitCode != 0 || !control.output.isBlank()) {
            String why = "systemd-analyze verify does not work here: a minimal valid unit gave exit " + control.exitCode + ": " + control.output.strip();
            System.out.println("SystemdUnitTest: skipped: " + why);
            Assumptions.abort(why);
        }
        // The check can fail here: a unit with an unknown key is reported.
        Path typo = dir.resolve("typo.service");
        Files.writeString(typo, Files.readString(UNIT).replace("Restart=on-failure", "Restart=on-failure\nRestrat=always"));
        Command bad = Command.run(60, List.of("systemd-analyze", "verify", typo.toString()));
        assertTrue(bad.output.contains("Restrat"), () -> "systemd-analyze did not report an unknown key:\n" + bad.output);

        Command verify = Command.run(60, List.of("systemd-analyze", "verify", UNIT.toString(), BACKUP_UNIT.toString(), BACKUP_TIMER.toString(),
            PROBE_UNIT.toString(), PROBE_TIMER.toString()));
        assertEquals(0, verify.exitCode, verify.output);
        assertTrue(verify.output.isBlank(), () -> "systemd-analyze verify deploy/systemd/*:\n" + verify.output);
    }

    @Test
    void theUnitAsksForWhatTheVpsNeeds() throws Exception {
        String unit = Files.readString(UNIT);
        for (String line : List.of("User=kiln", "StateDirectory=kiln", "Restart=on-failure", "LimitNOFILE=102400",
                "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes")) {
            assertTrue(unit.lines().anyMatch(l -> l.equals(line)), () -> UNIT + " lacks " + line);
        }
        assertFalse(unit.lines().anyMatch(l -> l.startsWith("MemoryDenyWriteExecute=yes")), "the JIT needs writable+executable memory");
        List<String> cmd = execStart();
        assertTrue(cmd.contains("@" + INSTALLED_JVM_OPTIONS), () -> "the unit starts the JVM with make demo's flags: " + cmd);
        List<String> flags = Arrays.asList(Files.readString(JVM_OPTIONS).replaceAll("(?m)#.*$", "").trim().split("\\s+"));
        assertTrue(flags.contains("-XX:+ExitOnOutOfMemoryError") && flags.contains("-Xmx256m"), flags::toString);
        assertEquals("/var/lib/kiln", option(cmd, "--data"), "the data directory is the StateDirectory");
        assertEquals("127.0.0.1", option(cmd, "--bind"), "kiln listens on loopback only; nginx is the public side");
    }

    /** nginx's upstream is where the unit makes kiln listen, and nginx drops idle upstream connections before kiln does. */
    @Test
    void theUnitAndTheNginxSiteAgree() throws Exception {
        List<String> cmd = execStart();
        String site = Files.readString(NGINX_SITE);
        Matcher upstream = Pattern.compile("server 127\\.0\\.0\\.1:(\\d+);").matcher(site);
        assertTrue(upstream.find(), "no upstream server in " + NGINX_SITE);
        assertEquals(option(cmd, "--port"), upstream.group(1), "kiln's --port and nginx's upstream port");
        Matcher keepalive = Pattern.compile("keepalive_timeout (\\d+)s;").matcher(site);
        assertTrue(keepalive.find(), "no upstream keepalive_timeout in " + NGINX_SITE);
        String idle = option(cmd, "--idle-timeout");
        long kilnIdleMs = idle == null ? 60_000 : Long.parseLong(idle);
        assertTrue(Long.parseLong(keepalive.group(1)) * 1000 < kilnIdleMs,
            "nginx's upstream keepalive_timeout must be shorter than kiln's --idle-timeout (" + kilnIdleMs + " ms)");
    }

    /** The unit's own command line, with the jar, data directory and port of this build: it serves and stops with 0. */
    @Test
    void theExecStartCommandServesAndStopsCleanly() throws Exception {
        FrontEnd kilim = FrontEnd.load(Dirs.repo().resolve("frontends.conf")).stream().filter(f -> f.id.equals("kilim")).findFirst().orElseThrow();
        assertTrue(kilim.built(), kilim.jarPath() + " is not built");
        Path data = Files.createTempDirectory(Files.createDirectories(Dirs.data()), "SystemdUnitTest-");
        List<String> cmd = new ArrayList<>();
        for (String w : execStart()) {
            if (w.equals("/usr/bin/java")) w = kilim.javaBinary();
            else if (w.equals("/opt/kiln/kiln-kilim.jar")) w = kilim.jarPath().toString();
            else if (w.equals("@" + INSTALLED_JVM_OPTIONS)) w = "@" + JVM_OPTIONS;
            else if (w.equals("/var/lib/kiln")) w = data.toString();
            cmd.add(w);
        }
        cmd.set(cmd.indexOf("--port") + 1, "0");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close();
        StringBuilder out = new StringBuilder();
        CompletableFuture<Integer> ready = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                Pattern listening = Pattern.compile("kiln-kilim listening on http://127\\.0\\.0\\.1:(\\d+)/");
                while ((line = r.readLine()) != null) {
                    synchronized (out) {
                        out.append(line).append('\n');
                    }
                    Matcher m = listening.matcher(line);
                    if (m.matches()) ready.complete(Integer.parseInt(m.group(1)));
                }
            } catch (IOException ignored) {
                // the process is gone
            }
            ready.completeExceptionally(new AssertionError("exited without a ready line"));
        });
        reader.setDaemon(true);
        reader.start();
        try {
            int port = ready.get(ServerProcess.START_TIMEOUT_S, TimeUnit.SECONDS);
            HttpResponse<String> r = Contract.CLIENT.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/healthz"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            assertEquals("ok", r.body());
            p.toHandle().destroy();  // SIGTERM, as systemctl stop sends it (KillSignal=)
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "did not stop within TimeoutStopSec");
            reader.join(5_000);
            String log;
            synchronized (out) {
                log = out.toString();
            }
            assertEquals(0, p.exitValue(), () -> "exit code after SIGTERM:\n" + log);
            assertTrue(log.contains("kiln-kilim stopped; database closed"), log);
        } finally {
            p.toHandle().destroyForcibly();
            ServerProcess.deleteRecursively(data);
        }
    }

    /**
     * kiln-backup.service's two commands, with this build's paths: the backup writes one dated
     * directory holding data.mdb beside a serving kiln, and the clean-up removes backups older than
     * 14 days and keeps the new one.
     */
    @Test
    void theBackupUnitsCommandsBackUpARunningServerAndPruneOldBackups() throws Exception {
        FrontEnd kilim = FrontEnd.load(Dirs.repo().resolve("frontends.conf")).stream().filter(f -> f.id.equals("kilim")).findFirst().orElseThrow();
        Path backups = Files.createTempDirectory(Files.createDirectories(Dirs.data()), "SystemdUnitTest-backups-");
        try (ServerProcess server = ServerProcess.start(kilim, "SystemdUnitTest-backup")) {
            Path old = Files.createDirectories(backups.resolve("2000-01-01-033000"));
            Files.writeString(old.resolve("data.mdb"), "old");
            Files.setLastModifiedTime(old, java.nio.file.attribute.FileTime.from(java.time.Instant.now().minus(Duration.ofDays(20))));
            Path recent = Files.createDirectories(backups.resolve("recent"));
            Files.setLastModifiedTime(recent, java.nio.file.attribute.FileTime.from(java.time.Instant.now().minus(Duration.ofDays(10))));

            String start = setting(BACKUP_UNIT, "ExecStart");
            Matcher script = Pattern.compile("^/bin/sh -c '(.*)'$").matcher(start);
            assertTrue(script.matches(), () -> "ExecStart is /bin/sh -c '...': " + start);
            String sh = script.group(1).replace("%%", "%")  // systemd's escape for %
                .replace("/usr/bin/java", kilim.javaBinary())
                .replace("/opt/kiln/kiln-kilim.jar", kilim.jarPath().toString())
                .replace("/var/lib/kiln", server.dataDir.toString())
                .replace("/var/backups/kiln", backups.toString());
            Command backup = Command.run(60, List.of("/bin/sh", "-c", sh));
            assertEquals(0, backup.exitCode, backup.output);
            assertTrue(backup.output.startsWith("kiln-kilim: backed up " + server.dataDir), backup.output);

            List<String> post = new ArrayList<>(Arrays.asList(setting(BACKUP_UNIT, "ExecStartPost")
                .replace("/var/backups/kiln", backups.toString()).split("\\s+")));
            Command prune = Command.run(60, post);
            assertEquals(0, prune.exitCode, prune.output);

            List<Path> left;
            try (var dirs = Files.list(backups)) {
                left = dirs.sorted().toList();
            }
            assertEquals(2, left.size(), () -> "the new backup and the 10-day-old one are kept, the 20-day-old one removed: " + left);
            assertTrue(left.contains(recent));
            Path made = left.stream().filter(p -> !p.equals(recent)).findFirst().orElseThrow();
            assertTrue(made.getFileName().toString().matches("\\d{4}-\\d{2}-\\d{2}-\\d{6}"), made::toString);
            try (var files = Files.list(made)) {
                assertEquals(List.of("data.mdb"), files.map(p -> p.getFileName().toString()).toList());
            }
            assertEquals(kiln.demo.DemoDb.WORLD_ROWS, Contract.storedWorlds(made).size(), "the backup opens and holds the world table");
        } finally {
            ServerProcess.deleteRecursively(backups);
        }
    }

    /**
     * kiln-healthcheck.service's command, with this build's port, a stand-in {@code systemctl} that
     * records what it is asked, and 1 s in place of its 5 s timeouts and delays: a serving kiln is
     * left alone; one that answers 503 (its {@code /healthz} after a handler held a thread too long)
     * or stops answering (a wedged JVM, here stopped with SIGSTOP) is restarted with
     * {@code systemctl try-restart kiln.service} after three failures, not one.
     */
    @Test
    void theHealthProbeRestartsAWedgedServerAndLeavesAHealthyOneAlone() throws Exception {
        Path bin = Files.createDirectories(Dirs.target().resolve("systemd-test/bin"));
        Path calls = bin.resolve("systemctl-calls");
        Path systemctl = bin.resolve("systemctl");
        Files.writeString(systemctl, "#!/bin/sh\necho \"$*\" >> '" + calls + "'\n");
        systemctl.toFile().setExecutable(true);
        String start = setting(PROBE_UNIT, "ExecStart");
        Matcher script = Pattern.compile("^/bin/sh -c '(.*)'$").matcher(start);
        assertTrue(script.matches(), () -> "ExecStart is /bin/sh -c '...': " + start);
        String probe = "PATH='" + bin + "':$PATH; " + script.group(1).replace("--max-time 5", "--max-time 1").replace("--retry-delay 5", "--retry-delay 1");
        FrontEnd kilim = FrontEnd.load(Dirs.repo().resolve("frontends.conf")).stream().filter(f -> f.id.equals("kilim")).findFirst().orElseThrow();

        try (ServerProcess server = ServerProcess.start(kilim, "SystemdUnitTest-probe")) {
            Files.deleteIfExists(calls);
            Command healthy = Command.run(60, List.of("/bin/sh", "-c", probe.replace("127.0.0.1:8080", "127.0.0.1:" + server.port)));
            assertEquals(0, healthy.exitCode, healthy.output);
            assertFalse(Files.exists(calls), "a healthy server is not restarted");

            Command.run(10, List.of("kill", "-STOP", Long.toString(server.pid())));
            try {
                long started = System.nanoTime();
                Command wedged = Command.run(60, List.of("/bin/sh", "-c", probe.replace("127.0.0.1:8080", "127.0.0.1:" + server.port)));
                long tookMs = (System.nanoTime() - started) / 1_000_000;
                assertTrue(wedged.output.contains("failed 3 times in a row: restarting kiln.service"), wedged.output);
                assertEquals(List.of("try-restart kiln.service"), Files.readAllLines(calls), "one restart of a server that does not answer");
                assertTrue(tookMs >= 4_000, "three attempts of 1 s with 1 s between them, not one: " + tookMs + " ms");
            } finally {
                Command.run(10, List.of("kill", "-CONT", Long.toString(server.pid())));
            }
        }

        HttpServer unhealthy = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        AtomicInteger asked = new AtomicInteger();
        unhealthy.createContext("/healthz", exchange -> {
            asked.incrementAndGet();
            byte[] body = "the handler of GET /x has held thread kiln-selector for 6000 ms without pausing (limit 5000 ms)".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(503, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        unhealthy.start();
        try {
            Files.deleteIfExists(calls);
            Command failing = Command.run(60, List.of("/bin/sh", "-c", probe.replace("127.0.0.1:8080", "127.0.0.1:" + unhealthy.getAddress().getPort())));
            assertEquals(3, asked.get(), "three tries before a restart");
            assertEquals(List.of("try-restart kiln.service"), Files.readAllLines(calls), failing.output);
        } finally {
            unhealthy.stop(0);
        }
    }
}

package kiln.db.postgresql;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import kiln.db.KvEngine;

/**
 * The PostgreSQL server of this JVM's tests: initialised and started on first use by
 * {@code scripts/postgres.sh} in a new directory under {@code /tmp} on a free loopback port, stopped
 * and removed when the JVM exits. Each test directory gets a schema of its own ({@link #engine}), so a test that reopens
 * its directory finds its rows, as on disk, and tests do not see each other's.
 */
public final class TestPostgres {
    private static Path dir;
    private static int port;

    private TestPostgres() {
    }

    /** @return the server's JDBC URL (database {@code kiln}, user {@code kiln}), starting it on first use */
    public static synchronized String url() {
        if (dir == null) start();
        return "jdbc:postgresql://127.0.0.1:" + port + "/kiln?user=kiln";
    }

    /** @return the server's data directory */
    public static synchronized Path dir() {
        url();
        return dir;
    }

    /** @return the server's port */
    public static synchronized int port() {
        url();
        return port;
    }

    /** @return an engine on the schema of {@code testDir} (called by kiln-db's Engines, by name) */
    public static KvEngine engine(Path testDir) {
        return PostgresEngine.open(url() + "&currentSchema=" + schema(testDir));
    }

    /** @return the schema name of a test directory: {@code t_} and 16 hex digits of its path's hash */
    public static String schema(Path testDir) {
        try {
            byte[] h = java.security.MessageDigest.getInstance("SHA-256")
                .digest(testDir.toAbsolutePath().normalize().toString().getBytes(StandardCharsets.UTF_8));
            return "t_" + java.util.HexFormat.of().formatHex(h, 0, 8);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Runs {@code scripts/postgres.sh} with {@code args}, failing with its output when it fails. */
    public static String script(String... args) {
        List<String> command = new ArrayList<>();
        command.add(repo().resolve("scripts/postgres.sh").toString());
        command.addAll(List.of(args));
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(command + " did not end in 120 s: " + out);
            }
            if (p.exitValue() != 0) throw new IllegalStateException(command + " failed (" + p.exitValue() + "): " + out);
            return out.trim();
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** @return the repository's root (the surefire property kiln.repo) */
    public static Path repo() {
        return Path.of(System.getProperty("kiln.repo", "..")).toAbsolutePath().normalize();
    }

    /** @return a free loopback port */
    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void start() {
        Path d;
        try {  // under /tmp: as root the server runs as the postgres user, which may not enter the checkout (/root/...)
            d = Files.createTempDirectory("kiln-test-postgres-",
                java.nio.file.attribute.PosixFilePermissions.asFileAttribute(java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x")))
                .resolve("data");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        int p = freePort();
        script("init", d.toString(), Integer.toString(p));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            script("stop", d.toString(), "fast");
            removeServer(d.getParent());
        }, "stop-test-postgres"));
        dir = d;
        port = p;
    }

    /** Stops a server left running in {@code d} (by a test JVM that was killed) and removes it. */
    public static void removeServer(Path d) {
        if (Files.exists(d.resolve("postmaster.pid"))) {
            try {
                script("stop", d.toString(), "immediate");
            } catch (IllegalStateException e) {
                // not running after all: its pid file is stale
            }
        }
        try (var walk = Files.exists(d) ? Files.walk(d) : java.util.stream.Stream.<Path>empty()) {
            for (Path f : walk.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(f);
        } catch (IOException e) {
            throw new IllegalStateException("cannot remove " + d, e);
        }
    }
}

package kiln.tools;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A PostgreSQL server for one test class, made by {@code scripts/postgres.sh} under {@code /tmp} (as
 * root it runs as the postgres user, who must reach its directory) on a free loopback port; stopped
 * and removed after the class. Its database {@code kiln}, user {@code kiln}.
 */
final class PostgresServer implements BeforeAllCallback, AfterAllCallback {
    private final int port = freePort();
    private Path dir;

    /** @return the URL of its database {@code kiln}, schema {@code schema}, as {@code kiln db} takes it */
    String url(String schema) {
        return "postgresql://kiln@127.0.0.1:" + port + "/kiln?currentSchema=" + schema;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        dir = Files.createTempDirectory("kiln-tools-postgres-", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        script("init", dir.resolve("data").toString(), Integer.toString(port));
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (dir == null) return;
        script("stop", dir.resolve("data").toString(), "fast");
        try (var walk = Files.walk(dir)) {
            for (Path f : walk.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(f);
        }
    }

    private static void script(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("kiln.repo", "..")).toAbsolutePath().normalize().resolve("scripts/postgres.sh").toString());
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(command + " did not end in 120 s: " + out);
        }
        if (p.exitValue() != 0) throw new IllegalStateException(command + " failed (" + p.exitValue() + "): " + out);
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}

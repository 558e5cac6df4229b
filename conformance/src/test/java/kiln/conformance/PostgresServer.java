package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A PostgreSQL server for one test class, by {@code scripts/postgres.sh} under {@code /tmp} (as root
 * it runs as the postgres user, who must reach its directory) on a port chosen when the class is
 * loaded, so that the class's {@link Servers} can name it in {@code --db}. Register it before the
 * Servers: extensions stop in reverse order, the servers before their database.
 */
final class PostgresServer implements BeforeAllCallback, AfterAllCallback {
    final int port = freePort();
    private Path dir;

    /** @return the URL of its database {@code kiln}, as {@code --db} takes it */
    String url() {
        return "postgresql://kiln@127.0.0.1:" + port + "/kiln";
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        dir = Files.createTempDirectory("kiln-conformance-postgres-", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        script("init", dir.resolve("data").toString(), Integer.toString(port));
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (dir == null) return;
        script("stop", dir.resolve("data").toString(), "fast");
        Command.run(60, List.of("rm", "-rf", dir.toString()));
    }

    private static void script(String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of(Dirs.repo().resolve("scripts/postgres.sh").toString()));
        command.addAll(List.of(args));
        Command c = Command.run(120, command);
        assertEquals(0, c.exitCode, () -> command + ":\n" + c.output);
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}

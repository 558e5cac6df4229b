package kiln.db.postgresql;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A PostgreSQL server of one test class, for the modules whose tests start servers over PostgreSQL
 * (http-kilim, tools, conformance; kiln-db-postgresql's test jar): made by {@code scripts/postgres.sh}
 * ({@link TestPostgres#script}) in a new directory under {@code /tmp} (as root it runs as the postgres
 * user, who must reach it) on a loopback port chosen when the class loads, so that the class can name
 * it before it starts; stopped and removed after the class. Its database {@code kiln}, user
 * {@code kiln}. Where one server for the whole test JVM will do, {@link TestPostgres} is that server.
 *
 * <pre>{@code
 * @RegisterExtension static final PostgresServer POSTGRES = new PostgresServer();
 * ... "--db", POSTGRES.url("my_schema") ...
 * }</pre>
 * Register it before extensions that start servers over it: extensions stop in reverse order.
 */
public final class PostgresServer implements BeforeAllCallback, AfterAllCallback {
    /** The server's port. */
    public final int port = TestPostgres.freePort();
    private Path dir;

    /** @return the URL of its database {@code kiln}, as {@code --db} and {@code kiln db} take it */
    public String url() {
        return url(port);
    }

    /** @return the URL of its database {@code kiln}, schema {@code schema} */
    public String url(String schema) {
        return url(port, schema);
    }

    /** @return the URL of its database {@code kiln} through {@code port} (a relay's to the server) */
    public String url(int port) {
        return "postgresql://kiln@127.0.0.1:" + port + "/kiln";
    }

    /** @return the URL of its database {@code kiln}, schema {@code schema}, through {@code port} */
    public String url(int port, String schema) {
        return url(port) + "?currentSchema=" + schema;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        dir = Files.createTempDirectory("kiln-postgres-", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        TestPostgres.script("init", dir.resolve("data").toString(), Integer.toString(port));
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (dir == null) return;
        TestPostgres.script("stop", dir.resolve("data").toString(), "fast");
        TestPostgres.removeServer(dir);
    }
}

package kiln.db.postgresql;

import java.nio.file.Path;

import kiln.db.KvEngine;
import kiln.db.KvEngineProvider;

/**
 * {@code postgresql-test:DIR}: PostgreSQL on the test server, a schema per test directory
 * ({@link TestPostgres#engine}); how kiln-db's layers' tests open PostgreSQL here ({@code kiln.test.engine=postgresql}).
 */
public final class TestPostgresProvider implements KvEngineProvider {
    private static final String SCHEME = "postgresql-test:";

    @Override
    public String name() {
        return "postgresql-test";
    }

    @Override
    public String usage() {
        return "postgresql-test:DIR (tests only)";
    }

    @Override
    public boolean accepts(String url) {
        return url.startsWith(SCHEME);
    }

    @Override
    public void check(String url) {
        if (url.length() == SCHEME.length()) throw new IllegalArgumentException("no directory in '" + url + "'");
    }

    @Override
    public KvEngine open(String url) {
        check(url);
        return TestPostgres.engine(Path.of(url.substring(SCHEME.length())));
    }
}

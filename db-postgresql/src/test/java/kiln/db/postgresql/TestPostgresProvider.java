package kiln.db.postgresql;

import kiln.db.DirectoryProvider;

/**
 * {@code postgresql-test:DIR}: PostgreSQL on the test server, a schema per test directory
 * ({@link TestPostgres#engine}); how kiln-db's layers' tests open PostgreSQL here ({@code kiln.test.engine=postgresql}).
 */
public final class TestPostgresProvider extends DirectoryProvider {
    public TestPostgresProvider() {
        super("postgresql-test", TestPostgres::engine);
    }
}

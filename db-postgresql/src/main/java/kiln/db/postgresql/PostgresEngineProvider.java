package kiln.db.postgresql;

import kiln.db.KvEngine;
import kiln.db.KvEngineProvider;

/** {@code postgresql://...}, {@code postgres://...} and {@code jdbc:postgresql://...}: {@link PostgresEngine}. */
public final class PostgresEngineProvider implements KvEngineProvider {
    @Override
    public String name() {
        return "postgresql";
    }

    @Override
    public String usage() {
        return "postgresql://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]/DATABASE[?readConnections=N&...] or jdbc:postgresql://...";
    }

    @Override
    public boolean accepts(String url) {
        return PostgresEngine.isUrl(url);
    }

    @Override
    public void check(String url) {
        PostgresEngine.checkUrl(url);
    }

    @Override
    public KvEngine open(String url) {
        return PostgresEngine.open(url);
    }

    /** {@link PostgresEngine#openReadOnly}: nothing created, no writer's connection. */
    @Override
    public KvEngine openReadOnly(String url) {
        return PostgresEngine.openReadOnly(url);
    }
}

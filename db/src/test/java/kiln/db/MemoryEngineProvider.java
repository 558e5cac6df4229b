package kiln.db;

import java.nio.file.Path;

/** {@code memory:DIR}: {@link MemoryEngine}'s store for that directory, registered as any engine's provider is. */
public final class MemoryEngineProvider implements KvEngineProvider {
    private static final String SCHEME = "memory:";

    @Override
    public String name() {
        return "memory";
    }

    @Override
    public String usage() {
        return "memory:DIR (tests only)";
    }

    @Override
    public boolean accepts(String url) {
        return url.startsWith(SCHEME);
    }

    @Override
    public void check(String url) {
        if (url.length() == SCHEME.length()) throw new IllegalArgumentException("no directory in '" + url + "' (memory:DIR)");
    }

    @Override
    public KvEngine open(String url) {
        check(url);
        return MemoryEngine.at(Path.of(url.substring(SCHEME.length())));
    }
}

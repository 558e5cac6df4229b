package kiln.db;

import java.nio.file.Path;
import java.util.function.Function;

/**
 * A test engine's provider: {@code SCHEME:DIR} opens the engine for that directory. Subclasses
 * name the scheme and the engine ({@link MemoryEngineProvider}, kiln-db-postgresql's test provider).
 */
public abstract class DirectoryProvider implements KvEngineProvider {
    private final String name;
    private final String scheme;
    private final Function<Path, KvEngine> open;

    /** @param name the engine's name, also its URL scheme ({@code name:DIR}) */
    protected DirectoryProvider(String name, Function<Path, KvEngine> open) {
        this.name = name;
        this.scheme = name + ":";
        this.open = open;
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final String usage() {
        return scheme + "DIR (tests only)";
    }

    @Override
    public final boolean accepts(String url) {
        return url.startsWith(scheme);
    }

    @Override
    public final void check(String url) {
        if (url.length() == scheme.length()) throw new IllegalArgumentException("no directory in '" + url + "' (" + usage() + ")");
    }

    @Override
    public final KvEngine open(String url) {
        check(url);
        return open.apply(Path.of(url.substring(scheme.length())));
    }

    /** The test engines open read-only as they open: their tests write nothing through a read-only one. */
    @Override
    public final KvEngine openReadOnly(String url) {
        return open(url);
    }
}

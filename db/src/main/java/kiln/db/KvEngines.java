package kiln.db;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * Finds the engine for a URL among the {@link KvEngineProvider}s on the class path
 * ({@link ServiceLoader}): {@code lmdb:DIR} or a bare directory with kiln-db-lmdb,
 * {@code postgresql://...} with kiln-db-postgresql, whatever else a module registers.
 * {@link Db#open(String)} calls it; an app rarely does:
 *
 * <pre>{@code
 * Db local = Db.open("lmdb:data?maxReaders=256");   // the provider of "lmdb:" opens the engine
 * Db shared = Db.open("postgresql://kiln@db1/kiln"); // fails at once, naming the engines found, without kiln-db-postgresql
 * }</pre>
 */
public final class KvEngines {
    private KvEngines() {
    }

    /**
     * Opens the engine {@code url} names.
     *
     * @throws IllegalArgumentException when no provider on the class path, or more than one, takes
     *         the URL (the message lists the engines found and their URL forms), or the URL is malformed
     * @throws DbException when the engine's data cannot be opened or reached
     */
    public static KvEngine open(String url) {
        return providerFor(url).open(url);
    }

    /**
     * Opens the engine {@code url} names to read only ({@link KvEngineProvider#openReadOnly}): safe
     * beside a server that writes the same data, where the engine allows.
     *
     * @throws IllegalArgumentException as {@link #open} does
     * @throws DbException when there is no database there, or it cannot be opened or reached
     * @throws UnsupportedOperationException when the engine cannot be opened read-only
     */
    public static KvEngine openReadOnly(String url) {
        return providerFor(url).openReadOnly(url);
    }

    /** @return the name of the engine that takes {@code url} ({@code lmdb}, {@code postgresql}) */
    public static String engineName(String url) {
        return providerFor(url).name();
    }

    /**
     * Checks that an engine on the class path takes {@code url} and that its form is right, without
     * opening anything.
     *
     * @throws IllegalArgumentException as {@link #open} does
     */
    public static void check(String url) {
        providerFor(url).check(url);
    }

    /** @return the providers on the class path, in the order {@link ServiceLoader} finds them */
    public static List<KvEngineProvider> providers() {
        List<KvEngineProvider> all = new ArrayList<>();
        ServiceLoader.load(KvEngineProvider.class, KvEngines.class.getClassLoader()).forEach(all::add);
        return all;
    }

    /**
     * @return {@code url} without its password ({@code user:***@host}, {@code password=***}), for
     *         logs and messages
     */
    public static String redact(String url) {
        return url.replaceAll("(?i)(password=)[^&]*", "$1***").replaceAll("(//[^/:@]*:)[^@/]*@", "$1***@");
    }

    private static KvEngineProvider providerFor(String url) {
        if (url == null || url.isEmpty()) throw new IllegalArgumentException("no database URL given");
        List<KvEngineProvider> all = providers();
        List<KvEngineProvider> taking = all.stream().filter(p -> p.accepts(url)).toList();
        if (taking.size() == 1) return taking.get(0);
        if (taking.isEmpty()) {
            String found = all.isEmpty() ? "none (add an engine's module to the class path: dev.kiln:kiln-db-lmdb, dev.kiln:kiln-db-postgresql)"
                : all.stream().map(p -> p.name() + " (" + p.usage() + ")").collect(Collectors.joining(", "));
            throw new IllegalArgumentException("no database engine on the class path opens '" + redact(url) + "'; engines found: " + found);
        }
        throw new IllegalArgumentException("more than one database engine takes '" + redact(url) + "': "
            + taking.stream().map(KvEngineProvider::name).collect(Collectors.joining(", ")));
    }
}

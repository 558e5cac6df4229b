package kiln.db;

/**
 * Opens one kind of {@link KvEngine} from a URL: the service {@link KvEngines} finds with
 * {@link java.util.ServiceLoader}. An engine's module registers its provider in
 * {@code META-INF/services/kiln.db.KvEngineProvider}, so a server or an app opens any engine on its
 * class path by URL ({@code lmdb:data}, {@code postgresql://host/db}) and depends on none of them in
 * its code; a jar carries the engines it is built with.
 *
 * <p>Adding an engine: a module with the engine, a provider and that one services line, plus one
 * dependency line in the pom of the jar that should carry it (docs/scaling.md shows a skeleton).
 */
public interface KvEngineProvider {
    /** @return the engine's name in messages and listings, e.g. {@code lmdb} */
    String name();

    /** @return the forms of URL it opens, for messages: e.g. {@code lmdb:DIR[?maxReaders=N] or DIR} */
    String usage();

    /**
     * @return true when {@code url} is this provider's to open (by its scheme; the provider of the
     *         local file engine also takes a bare directory path). At most one provider on a class
     *         path may accept a URL.
     */
    boolean accepts(String url);

    /**
     * Checks {@code url}'s form and parameters without opening anything (a command line's parse).
     *
     * @throws IllegalArgumentException saying what is wrong with it
     */
    void check(String url);

    /**
     * Opens the engine; the caller closes it (a {@link Db} built over it closes it with itself).
     *
     * @throws IllegalArgumentException when the URL is malformed
     * @throws DbException when the engine's data cannot be opened or reached
     */
    KvEngine open(String url);

    /**
     * Opens the engine's data to read it only, for a tool beside a running server ({@code kiln db
     * stat}, {@code dump}): nothing is created or written, no lock a writer takes is held, and
     * {@link KvEngine#beginWrite} is refused. Its read transactions are snapshots as ever.
     *
     * @throws IllegalArgumentException when the URL is malformed
     * @throws DbException when there is no database there, or it cannot be opened or reached
     * @throws UnsupportedOperationException when the engine cannot be opened read-only (the default)
     */
    default KvEngine openReadOnly(String url) {
        throw new UnsupportedOperationException("the " + name() + " engine cannot be opened read-only");
    }
}

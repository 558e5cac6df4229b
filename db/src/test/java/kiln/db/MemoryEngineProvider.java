package kiln.db;

/** {@code memory:DIR}: {@link MemoryEngine}'s store for that directory, registered as any engine's provider is. */
public final class MemoryEngineProvider extends DirectoryProvider {
    public MemoryEngineProvider() {
        super("memory", MemoryEngine::at);
    }
}

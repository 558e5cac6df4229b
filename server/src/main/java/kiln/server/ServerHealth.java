package kiln.server;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * What a running server knows of its own health, beside its database's: the problems its front end
 * reports while they last, e.g. Kilim's "the handler of GET /x has held thread kiln-selector for
 * 6000 ms". An app's health endpoint answers 503 with the first one (the demo's {@code /healthz}).
 * Thread-safe; checks are registered when the server is built and read on every health request.
 */
public final class ServerHealth {
    private final List<Supplier<String>> checks = new CopyOnWriteArrayList<>();

    /** @param problem a check that gives null while all is well, else the problem in one line; cheap, never blocking */
    public void add(Supplier<String> problem) {
        checks.add(problem);
    }

    /** @return null while every check is well; else the first problem */
    public String problem() {
        for (Supplier<String> check : checks) {
            String p = check.get();
            if (p != null) return p;
        }
        return null;
    }
}

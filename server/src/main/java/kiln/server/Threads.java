package kiln.server;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** Thread factories for kiln's own threads. */
public final class Threads {
    private Threads() {
    }

    /**
     * @param prefix the threads' name without the number, e.g. {@code "kiln-worker-"}; a name
     *               without a trailing dash is used as is for every thread ({@code "kiln-reaper"})
     * @return a factory of daemon threads named {@code prefix1, prefix2...}: they never keep the JVM
     *         alive, the server's own non-daemon threads do
     */
    public static ThreadFactory daemon(String prefix) {
        AtomicInteger n = new AtomicInteger();
        boolean numbered = prefix.endsWith("-");
        return r -> {
            // The name is computed before `new Thread`: Quasar's agent (the comsat front end loads this
            // class under it) fails with ArrayIndexOutOfBounds on a conditional inside constructor arguments.
            String name = numbered ? prefix + n.incrementAndGet() : prefix;
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}

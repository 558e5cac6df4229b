package kiln.tools;

import java.io.PrintStream;
import java.util.Locale;

/**
 * What a long load or copy tells its user on standard error meanwhile: each space when it is done,
 * and a space's progress at most every {@value #EVERY_MS} ms while it is filled. Quiet: nothing.
 */
final class Progress {
    static final long EVERY_MS = 2_000;
    private final PrintStream err;
    private final boolean quiet;
    private long last = System.nanoTime();

    Progress(PrintStream err, boolean quiet) {
        this.err = err;
        this.quiet = quiet;
    }

    void entries(String space, long done, long expected) {
        if (quiet || System.nanoTime() - last < EVERY_MS * 1_000_000) return;
        last = System.nanoTime();
        String of = expected > 0 ? String.format(Locale.ROOT, " of %,d (%d %%)", expected, done * 100 / expected) : "";
        err.printf(Locale.ROOT, "  %s: %,d entries%s%n", space, done, of);
    }

    void spaceDone(String space, long entries) {
        if (quiet) return;
        err.printf(Locale.ROOT, "  %s: %s%n", space, Layout.plural(entries, "entry"));
    }
}

package kiln.tools;

import java.io.PrintStream;
import java.util.Locale;

/**
 * What a long load or copy tells its user on standard error meanwhile: a space's progress at most
 * every {@value #EVERY_MS} ms while it is filled, and its end when its progress was told. A load
 * shorter than that says nothing here (its report follows); quiet: nothing at all.
 */
final class Progress {
    static final long EVERY_MS = 2_000;
    private final PrintStream err;
    private final boolean quiet;
    private long last = System.nanoTime();
    /** The space whose progress was told, until its end is. */
    private String told;

    Progress(PrintStream err, boolean quiet) {
        this.err = err;
        this.quiet = quiet;
    }

    void entries(String space, long done, long expected) {
        if (quiet || System.nanoTime() - last < EVERY_MS * 1_000_000) return;
        last = System.nanoTime();
        told = space;
        String of = expected > 0 ? String.format(Locale.ROOT, " of %,d (%d %%)", expected, done * 100 / expected) : "";
        err.printf(Locale.ROOT, "  %s: %,d entries%s%n", space, done, of);
    }

    void spaceDone(String space, long entries) {
        if (quiet || !space.equals(told)) return;
        told = null;
        err.printf(Locale.ROOT, "  %s: %s%n", space, Layout.plural(entries, "entry"));
    }
}

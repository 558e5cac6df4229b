package kiln.tools;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

import kiln.db.DbException;
import kiln.db.Keys;
import kiln.db.KvCursor;
import kiln.db.KvEngine;
import kiln.db.KvEngines;
import kiln.db.KvSpace;
import kiln.db.KvTxn;
import kiln.db.Tuple;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kiln db}: see and move a kiln database over any engine URL, at the key-value level, with no
 * app code (the anchors: LMDB's mdb_stat, mdb_dump and mdb_load, the sqlite3 shell, pg_dump,
 * FoundationDB's fdbcli). Reading commands open the database read-only ({@link KvEngines#openReadOnly}),
 * so they run beside a server: LMDB's readers, PostgreSQL's snapshots. Writing ones ({@code load},
 * {@code copy}'s target) open it to write, which LMDB refuses while a server has the directory open
 * (its writers' lock), and refuse a PostgreSQL database with other sessions on it, or one that holds
 * data. Exit status: 0 done, 1 refused or failed (one line says why), 2 a wrong command line.
 */
@Command(name = "kiln db", mixinStandardHelpOptions = true, version = "kiln db 0.1.0", sortOptions = false, usageHelpWidth = 110,
    subcommands = {DbTool.StatCommand.class, DbTool.GetCommand.class, DbTool.RangeCommand.class, DbTool.DumpCommand.class,
        DbTool.LoadCommand.class, DbTool.CopyCommand.class, DbTool.VerifyCommand.class, CommandLine.HelpCommand.class},
    description = {"See and move a kiln database, over any engine URL, without the app's code.",
        "URL: a directory or lmdb:DIR[?maxTables=N...] (LMDB), postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?currentSchema=S] (PostgreSQL).",
        "Reading commands run beside a running server; load and copy refuse a database a server uses, or one that holds data."},
    footer = {"", "Keys are typed and printed as \"text\" (or str:text), a tuple (\"lobby\", 3), int:42, long:42 or hex 0x0102.",
        "Exit status: 0 done, 1 refused or failed, 2 a wrong command line. More: docs/operations.md, \"Seeing and moving data\"."})
public final class DbTool implements Runnable {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    private final PrintStream out;
    private final PrintStream err;

    DbTool(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a command is missing: stat, get, range, dump, load, copy or verify");
    }

    public static void main(String[] args) {
        quietLogs();
        int status = execute(System.out, System.err, args);
        System.out.flush();
        System.exit(status);
    }

    /** Logs at warnings and above, one line each: HikariCP's pool start and stop are not the tool's output. */
    private static void quietLogs() {
        System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.setLevel(java.util.logging.Level.WARNING);
        for (java.util.logging.Handler h : root.getHandlers()) h.setLevel(java.util.logging.Level.WARNING);
    }

    /** Runs one command line. @return its exit status */
    static int execute(PrintStream out, PrintStream err, String... args) {
        DbTool tool = new DbTool(out, err);
        CommandLine cl = new CommandLine(tool, new CommandLine.IFactory() {
            @Override
            public <K> K create(Class<K> cls) throws Exception {
                if (Sub.class.isAssignableFrom(cls)) {
                    K sub = CommandLine.defaultFactory().create(cls);
                    ((Sub) sub).tool = tool;
                    return sub;
                }
                return CommandLine.defaultFactory().create(cls);
            }
        });
        cl.setOut(new PrintWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8), true));
        cl.setErr(new PrintWriter(new OutputStreamWriter(err, StandardCharsets.UTF_8), true));
        cl.setExecutionExceptionHandler((e, line, parsed) -> {
            err.println("kiln db: " + message(e));
            err.flush();
            return 1;
        });
        return cl.execute(args);
    }

    /** @return what the user reads of a failure: the tool's and the database's messages as they are */
    private static String message(Exception e) {
        if (e instanceof ToolException || e instanceof DbException || e instanceof IllegalArgumentException
                || e instanceof UnsupportedOperationException || e instanceof UncheckedIOException) {
            return e.getMessage();
        }
        return e.toString();
    }

    // ---- opening ----

    /** @return the engine at {@code url}, read-only */
    static KvEngine openReadOnly(String url) {
        return KvEngines.openReadOnly(named(url, "kiln-db"));
    }

    /**
     * @return the engine at {@code url}, to write; its PostgreSQL sessions named as this process's
     *         alone, and 2 read connections unless the URL says (a tool's, not a server's 8)
     */
    static KvEngine openToWrite(String url) {
        String named = named(url, "kiln-db-load-" + ProcessHandle.current().pid());
        if (!named.equals(url) && !url.contains("readConnections=")) named += "&readConnections=2";
        return KvEngines.open(named);
    }

    /**
     * @return {@code url} with its PostgreSQL sessions named {@code name} (ApplicationName, which
     *         pg_stat_activity shows, and by which {@link KvEngine#otherClients} tells them from others'); other URLs as they are
     */
    static String named(String url, String name) {
        if (!KvEngines.engineName(url).equals("postgresql")) return url;
        return url + (url.contains("?") ? "&" : "?") + "ApplicationName=" + name;
    }

    /** @return the directory of an LMDB URL, its real path where it exists; null for another engine */
    static Path lmdbDirectory(String url) {
        if (!KvEngines.engineName(url).equals("lmdb")) return null;
        String dir = url.startsWith("lmdb:") ? url.substring(5) : url;
        if (url.startsWith("lmdb:") && dir.indexOf('?') >= 0) dir = dir.substring(0, dir.indexOf('?'));
        Path p = Path.of(dir).toAbsolutePath().normalize();
        try {
            return Files.exists(p) ? p.toRealPath() : p;
        } catch (IOException e) {
            return p;
        }
    }

    static KvSpace space(KvEngine engine, KvTxn txn, String name) {
        KvSpace s = engine.space(txn, name, false);
        if (s == null) throw new ToolException("no space '" + name + "' in " + Layout.where(engine) + "; there are: " + String.join(", ", engine.spaceNames(txn)));
        return s;
    }

    /** A subcommand, given the tool's streams. */
    abstract static class Sub {
        @CommandLine.Spec CommandLine.Model.CommandSpec spec;
        DbTool tool;

        /** @return a wrong command line's exception: picocli prints it with the usage, and exits 2 */
        CommandLine.ParameterException wrong(String message) {
            return new CommandLine.ParameterException(spec.commandLine(), message);
        }
    }

    // ---- the commands ----

    @Command(name = "stat", mixinStandardHelpOptions = true, usageHelpWidth = 110, sortOptions = false, description = {
        "Every space: kind, entries, bytes, index builds, feeds' last sequences, the map's use.",
        "In one snapshot, each space's kind, entries and bytes of keys and values, and what kiln's marks say of it: an",
        "index's build state, a feed's last sequence, an expiring table's next expiry, the sequences' values; then the",
        "map's use (LMDB). Read-only: runs beside a server."})
    static final class StatCommand extends Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "URL", description = "the database") String url;

        @Override
        public Integer call() {
            try (KvEngine engine = openReadOnly(url)) {
                Stat.print(tool.out, KvEngines.engineName(url), engine, Stat.rows(engine));
            }
            return 0;
        }
    }

    @Command(name = "get", mixinStandardHelpOptions = true, usageHelpWidth = 110, sortOptions = false, description = {
        "One entry of a space; in an index, an index key's rows.",
        "Prints the entry as range does: its key and value (and expiry, in an expiring table); in an index, each row key",
        "of the index key. Exit status 1 when there is none. Read-only: runs beside a server."})
    static final class GetCommand extends Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "URL", description = "the database") String url;
        @Parameters(index = "1", paramLabel = "SPACE", description = "a table, index or any space stat lists") String spaceName;
        @Parameters(index = "2", paramLabel = "KEY", description = "the key (in an index: the index key), e.g. int:42, '\"ada@example.org\"', '(\"lobby\", 3)'") String key;

        @Override
        public Integer call() {
            byte[] k = Literal.parse(key);
            try (KvEngine engine = openReadOnly(url); KvTxn txn = engine.beginRead()) {
                KvSpace space = space(engine, txn, spaceName);
                Layout layout = Layout.read(engine, txn);
                Layout.Kind kind = layout.kind(spaceName);
                Instant now = Instant.now();
                int found = 0;
                if (kind == Layout.Kind.INDEX) {
                    byte[] p = Tuple.of(k).pack();
                    try (KvCursor c = txn.range(space, p, Keys.next(p, (byte) 0x02), false, 0)) {
                        while (c.next()) {
                            tool.out.println(Render.entry(layout, kind, Keys.toArray(c.key()), Keys.toArray(c.value()), now).text());
                            found++;
                        }
                    }
                } else {
                    ByteBuffer v = txn.get(space, ByteBuffer.allocateDirect(Math.max(1, k.length)).put(k).flip());
                    if (v != null) {
                        tool.out.println(Render.entry(layout, kind, k, Keys.toArray(v), now).text());
                        found++;
                    }
                }
                if (found == 0) {
                    tool.err.println("kiln db: " + Literal.key(k) + ": not found in " + spaceName);
                    return 1;
                }
            }
            return 0;
        }
    }

    @Command(name = "range", mixinStandardHelpOptions = true, usageHelpWidth = 110, sortOptions = false, description = {
        "A page of a space's entries, in key order.",
        "One entry per line: KEY, TAB, VALUE (and TAB, a note).",
        "Keys print as they are typed: \"text\", tuples, int:N, long:N, 0xHEX; values as JSON, \"text\", numbers or hex.",
        "In an index, KEY bounds are index keys and each line is an index key and its row's key.",
        "When more entries follow, the last line on standard error gives the --after of the next page.",
        "Read-only: runs beside a server."})
    static final class RangeCommand extends Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "URL", description = "the database") String url;
        @Parameters(index = "1", paramLabel = "SPACE", description = "a table, index or any space stat lists") String spaceName;
        @Option(names = "--prefix", paramLabel = "KEY", description = "only keys that begin with KEY (a tuple: whole elements)") String prefix;
        @Option(names = "--from", paramLabel = "KEY", description = "keys at or after KEY") String from;
        @Option(names = "--to", paramLabel = "KEY", description = "keys before KEY") String to;
        @Option(names = "--after", paramLabel = "KEY", description = "the page after KEY, as a previous page printed it") String after;
        @Option(names = "--reverse", description = "last keys first") boolean reverse;
        @Option(names = "--limit", paramLabel = "N", defaultValue = "100", description = "entries per page (default ${DEFAULT-VALUE}; 0: all)") int limit;

        @Override
        public Integer call() {
            if (limit < 0) throw wrong("--limit must be 0 or more, got " + limit);
            try (KvEngine engine = openReadOnly(url); KvTxn txn = engine.beginRead()) {
                KvSpace space = space(engine, txn, spaceName);
                Layout layout = Layout.read(engine, txn);
                Layout.Kind kind = layout.kind(spaceName);
                boolean index = kind == Layout.Kind.INDEX;
                byte[] begin = from == null ? null : bound(Literal.parse(from), index);
                byte[] end = to == null ? null : bound(Literal.parse(to), index);
                byte[] p = null;
                boolean tuplePrefix = false;
                if (prefix != null) {
                    p = bound(Literal.parse(prefix), index);
                    tuplePrefix = !index && prefix.strip().startsWith("(");
                    begin = Keys.max(begin, p);
                    end = Keys.min(end, Keys.strinc(p));
                }
                if (after != null) {
                    byte[] a = Literal.parse(after);
                    if (reverse) end = Keys.min(end, a);
                    else begin = Keys.max(begin, Keys.next(a, (byte) 0));
                }
                Instant now = Instant.now();
                int shown = 0;
                byte[] last = null;
                try (KvCursor c = txn.range(space, begin, end, reverse, limit == 0 ? 0 : limit + 1)) {
                    while (c.next()) {
                        byte[] k = Keys.toArray(c.key());
                        if (tuplePrefix && k.length > p.length && (k[p.length] & 0xFF) == 0xFF) continue;  // ("lobby\0x"): not ("lobby", ...)
                        if (limit > 0 && shown == limit) {
                            tool.err.println("-- " + Layout.plural(shown, "entry") + "; more after: --after '" + Literal.key(last) + "'");
                            return 0;
                        }
                        tool.out.println(Render.entry(layout, kind, k, Keys.toArray(c.value()), now).text());
                        last = k;
                        shown++;
                    }
                }
            }
            return 0;
        }

        /** @return the raw key bound of a typed key: in an index, where the entries of index keys from {@code k} begin */
        private static byte[] bound(byte[] k, boolean index) {
            if (!index) return k;
            byte[] packed = Tuple.of(k).pack();
            return Arrays.copyOf(packed, packed.length - 1);  // without the byte string's terminator: a prefix of k's entries and of longer keys'
        }
    }

    @Command(name = "dump", mixinStandardHelpOptions = true, usageHelpWidth = 110, sortOptions = false, description = {
        "The database as a portable dump, a line per entry.",
        "The database, or some of its spaces, in one snapshot as JSON lines, a line per entry",
        "(keys and values in base64), each space counted and digested (SHA-256) so that load checks it.",
        "Read-only: runs beside a server (an LMDB snapshot held for long keeps freed pages from reuse meanwhile)."})
    static final class DumpCommand extends Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "URL", description = "the database") String url;
        @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "the dump's file, new (default: standard output)") Path output;
        @Option(names = "--space", paramLabel = "SPACE", description = "only this space (repeat for more)") List<String> spaces;

        @Override
        public Integer call() throws IOException {
            if (output != null && Files.exists(output)) throw new ToolException(output + " exists: dump into a new file");
            Path partial = output == null ? null : output.resolveSibling(output.getFileName() + ".partial");
            try (KvEngine engine = openReadOnly(url)) {
                Dump.Header h;
                long[] counts = new long[2];
                if (partial == null) {
                    Writer w = new BufferedWriter(new OutputStreamWriter(tool.out, StandardCharsets.UTF_8), 1 << 16);
                    h = Dump.read(engine, KvEngines.engineName(url), spaces, counting(new DumpFile.Out(w), counts));
                } else {
                    try (Writer w = Files.newBufferedWriter(partial, StandardCharsets.UTF_8)) {
                        h = Dump.read(engine, KvEngines.engineName(url), spaces, counting(new DumpFile.Out(w), counts));
                    } catch (RuntimeException | IOException e) {
                        Files.deleteIfExists(partial);
                        throw e;
                    }
                    Files.move(partial, output, StandardCopyOption.ATOMIC_MOVE);
                }
                tool.err.printf(Locale.ROOT, "dumped %s, %s of %s (snapshot %s) to %s%n", Layout.plural(counts[0], "space"),
                    Layout.plural(counts[1], "entry"), h.source(), h.taken(), output == null ? "standard output" : output);
            }
            return 0;
        }
    }

    /** @return {@code sink}, counting the spaces and entries it finishes with into {@code counts} */
    private static Dump.Sink counting(Dump.Sink sink, long[] counts) {
        return new Dump.Sink() {
            @Override public void begin(Dump.Header header) { sink.begin(header); }
            @Override public void space(String name, long expected) { sink.space(name, expected); }
            @Override public void entry(ByteBuffer key, ByteBuffer value) { sink.entry(key, value); }
            @Override public void end(String name, long entries, byte[] sha256) { sink.end(name, entries, sha256); }
            @Override public void finish(long spaces, long entries) {
                counts[0] = spaces;
                counts[1] = entries;
                sink.finish(spaces, entries);
            }
        };
    }

    @Command(name = "load", mixinStandardHelpOptions = true, usageHelpWidth = 110, sortOptions = false, description = {
        "A dump into an empty database.",
        "In write transactions of bounded size, each space checked against the dump's count and digest",
        "as it is read, and read back from the database at the end. Refused where a server uses the database (LMDB: its",
        "writers' lock; PostgreSQL: other sessions on it), and where it holds data, unless --replace."})
    static final class LoadCommand extends Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "URL", description = "the database to load into (created where missing)") String url;
        @Option(names = {"-i", "--input"}, paramLabel = "FILE", description = "the dump (default: standard input)") Path input;
        @Option(names = "--replace", description = "empty the dump's spaces in the database first (its other spaces stay)") boolean replace;
        @Option(names = "--batch", paramLabel = "N", defaultValue = "" + Loader.BATCH_ENTRIES,
            description = "entries per write transaction, at most (default ${DEFAULT-VALUE}; and at most 4 MiB)") int batch;
        @Option(names = {"-q", "--quiet"}, description = "no progress on standard error") boolean quiet;

        @Override
        public Integer call() throws IOException {
            if (batch < 1) throw wrong("--batch must be 1 or more, got " + batch);
            try (KvEngine engine = openToWrite(url)) {
                Loader loader = new Loader(engine, replace, batch, new Progress(tool.err, quiet));
                String name = input == null ? "standard input" : input.toString();
                Dump.Header h;
                try (BufferedReader in = input == null ? new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16)
                        : Files.newBufferedReader(input, StandardCharsets.UTF_8)) {
                    h = DumpFile.read(in, name, loader);
                } catch (RuntimeException e) {
                    loader.abandon();
                    throw partly(e, loader, engine);
                }
                report(tool.out, "loaded", loader, engine, "from " + name + " (a dump of " + h.source() + ", snapshot " + h.taken() + ")");
            }
            return 0;
        }
    }

    /** @return {@code e}, saying what a load that failed half-way left in the target */
    private static RuntimeException partly(RuntimeException e, Loader loader, KvEngine target) {
        if (loader.loaded().isEmpty() || !(e instanceof ToolException)) return e;
        return new ToolException(e.getMessage() + "; " + Layout.where(target) + " holds what was loaded before ("
            + Layout.plural(loader.loaded().size(), "space") + "): load again with --replace", e);
    }

    private static void report(PrintStream out, String verb, Loader loader, KvEngine target, String from) {
        long entries = loader.loaded().values().stream().mapToLong(Long::longValue).sum();
        out.printf(Locale.ROOT, "%s %s, %s into %s %s; read back and checked%n", verb, Layout.plural(loader.loaded().size(), "space"),
            Layout.plural(entries, "entry"), Layout.where(target), from);
        int width = 5;
        for (String s : loader.loaded().keySet()) width = Math.max(width, s.length());
        for (Map.Entry<String, Long> e : loader.loaded().entrySet()) out.printf(Locale.ROOT, "  %-" + width + "s  %,10d%n", e.getKey(), e.getValue());
        if (!loader.emptied().isEmpty()) out.println("emptied first (--replace): " + String.join(", ", loader.emptied()));
        if (!loader.leftAlone().isEmpty()) out.println("left as they were (not in the dump): " + String.join(", ", loader.leftAlone()));
    }

    @Command(name = "copy", mixinStandardHelpOptions = true, usageHelpWidth = 110, sortOptions = false, description = {
        "One database into another, empty one: LMDB into PostgreSQL and back.",
        "Over any two engines, every space,",
        "so tables, indexes, feeds and their sequence numbers, sequences, expiries and settings alike; a dump piped into a",
        "load in one process. FROM is read in one snapshot, beside a server; TO is refused as load refuses it."})
    static final class CopyCommand extends Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "FROM", description = "the database to copy (read-only)") String from;
        @Parameters(index = "1", paramLabel = "TO", description = "the database to copy into (created where missing)") String to;
        @Option(names = "--space", paramLabel = "SPACE", description = "only this space (repeat for more)") List<String> spaces;
        @Option(names = "--replace", description = "empty the copied spaces in TO first (its other spaces stay)") boolean replace;
        @Option(names = "--batch", paramLabel = "N", defaultValue = "" + Loader.BATCH_ENTRIES,
            description = "entries per write transaction, at most (default ${DEFAULT-VALUE}; and at most 4 MiB)") int batch;
        @Option(names = {"-q", "--quiet"}, description = "no progress on standard error") boolean quiet;

        @Override
        public Integer call() {
            if (batch < 1) throw wrong("--batch must be 1 or more, got " + batch);
            Path a = lmdbDirectory(from);
            if (a != null && a.equals(lmdbDirectory(to))) throw new ToolException("FROM and TO are the same directory, " + a);
            try (KvEngine source = openReadOnly(from); KvEngine target = openToWrite(to)) {
                if (Layout.where(source).equals(Layout.where(target))) throw new ToolException("FROM and TO are the same database, " + Layout.where(source));
                Loader loader = new Loader(target, replace, batch, new Progress(tool.err, quiet));
                Dump.Header h;
                try {
                    h = Dump.read(source, KvEngines.engineName(from), spaces, loader);
                } catch (RuntimeException e) {
                    loader.abandon();
                    throw partly(e, loader, target);
                }
                report(tool.out, "copied", loader, target, "from " + h.source() + " (snapshot " + h.taken() + ")");
            }
            return 0;
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true, usageHelpWidth = 110, sortOptions = false, description = {
        "Check every space and kiln's structures in it.",
        "Reads the whole database in one snapshot and checks it: every space's keys in order and its count (the engine's",
        "walk), feed logs without gaps, expiry schedules against their tables, index entries' shape and build state,",
        "sequences, settings. Exit status 1 when a problem is found. Read-only: runs beside a server."})
    static final class VerifyCommand extends Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "URL", description = "the database") String url;

        @Override
        public Integer call() {
            try (KvEngine engine = openReadOnly(url)) {
                return Verify.print(tool.out, KvEngines.engineName(url) + " " + Layout.where(engine), Verify.run(engine)) == 0 ? 0 : 1;
            }
        }
    }
}

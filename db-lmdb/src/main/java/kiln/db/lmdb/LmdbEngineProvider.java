package kiln.db.lmdb;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import kiln.db.KvEngine;
import kiln.db.KvEngineProvider;

/**
 * {@code lmdb:DIR[?maxMapSize=BYTES&maxReaders=N&maxTables=N&readerWaitMs=MS&lock=false]}, or a bare
 * directory path (any URL without a scheme): {@link LmdbEngine}, with the settings of
 * {@link LmdbEngine.Builder} ({@code lock=false}: {@link LmdbEngine.Builder#withoutLock}).
 */
public final class LmdbEngineProvider implements KvEngineProvider {
    private static final String SCHEME = "lmdb:";

    @Override
    public String name() {
        return "lmdb";
    }

    @Override
    public String usage() {
        return "lmdb:DIR[?maxMapSize=BYTES&maxReaders=N&maxTables=N&readerWaitMs=MS&lock=false] or a directory";
    }

    /** @return true for {@code lmdb:...} and for a string without a URL scheme (a path) */
    @Override
    public boolean accepts(String url) {
        return url.startsWith(SCHEME) || !url.matches("(?s)[A-Za-z][A-Za-z0-9+.-]+:.*");
    }

    @Override
    public void check(String url) {
        builder(url);
    }

    @Override
    public KvEngine open(String url) {
        return builder(url).open();
    }

    /** {@link LmdbEngine.Builder#readOnly}: MDB_RDONLY, no lock, beside a server that writes the directory. */
    @Override
    public KvEngine openReadOnly(String url) {
        return builder(url).readOnly().open();
    }

    /** @throws IllegalArgumentException for an empty directory, an unknown parameter or a value out of range */
    static LmdbEngine.Builder builder(String url) {
        String rest = url.startsWith(SCHEME) ? url.substring(SCHEME.length()) : url;
        int q = url.startsWith(SCHEME) ? rest.indexOf('?') : -1;  // a bare path is a path, '?' and all
        String dir = q < 0 ? rest : rest.substring(0, q);
        if (dir.isEmpty()) throw new IllegalArgumentException("no directory in '" + url + "' (lmdb:DIR)");
        LmdbEngine.Builder b = LmdbEngine.builder(Path.of(dir));
        for (Map.Entry<String, String> p : params(q < 0 ? "" : rest.substring(q + 1)).entrySet()) {
            if (p.getKey().equals("lock")) {
                if (!p.getValue().equals("false") && !p.getValue().equals("true")) {
                    throw new IllegalArgumentException("lock must be true or false, got '" + p.getValue() + "'");
                }
                if (p.getValue().equals("false")) b.withoutLock();
                continue;
            }
            long n = number(p.getKey(), p.getValue());
            switch (p.getKey()) {
                case "maxMapSize" -> b.maxMapSize(n);
                case "maxReaders" -> b.maxReaders(toInt(p.getKey(), n));
                case "maxTables" -> b.maxTables(toInt(p.getKey(), n));
                case "readerWaitMs" -> b.readerWait(Duration.ofMillis(n));
                default -> throw new IllegalArgumentException("unknown parameter '" + p.getKey() + "' in '" + url
                    + "': lmdb: takes maxMapSize, maxReaders, maxTables, readerWaitMs, lock");
            }
        }
        return b;
    }

    private static Map<String, String> params(String query) {
        Map<String, String> params = new LinkedHashMap<>();
        if (query.isEmpty()) return params;
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("parameter '" + pair + "' is not NAME=VALUE");
            params.put(pair.substring(0, eq), pair.substring(eq + 1));
        }
        return params;
    }

    private static long number(String name, String value) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, got '" + value + "'");
        }
    }

    private static int toInt(String name, long n) {
        if (n > Integer.MAX_VALUE || n < Integer.MIN_VALUE) throw new IllegalArgumentException(name + " is out of range: " + n);
        return (int) n;
    }
}

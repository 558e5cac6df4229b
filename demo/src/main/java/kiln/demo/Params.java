package kiln.demo;

import kiln.http.HttpException;
import kiln.http.Request;

/** The demo endpoints' parameter rules (TechEmpower test types 3 and 5, /worlds/{id}, /hello?delay=MS). */
public final class Params {
    /** Most rows one /queries or /updates request may ask for (TechEmpower test types 3 and 5). */
    public static final int MAX_QUERIES = 500;
    /** Longest /hello delay accepted, in ms. */
    public static final int MAX_DELAY_MS = 60_000;

    private Params() {
    }

    /**
     * The {@code queries} rule of TechEmpower test types 3 and 5: an integer clamped to 1..500;
     * missing, empty or not an integer means 1.
     *
     * @param raw the decoded parameter value, or null when absent
     */
    public static int queries(String raw) {
        if (raw == null || raw.isEmpty()) return 1;
        long n;
        try {
            n = Long.parseLong(raw.trim());
        } catch (NumberFormatException e) {
            return 1;
        }
        return (int) Math.max(1, Math.min(MAX_QUERIES, n));
    }

    /**
     * The {@code {id}} of {@code /worlds/{id}}: a World id, 1..10000, in its canonical decimal form
     * ({@link Request#pathParamLong}), so that a row has one path and a rule on it
     * ({@code --auth-paths /worlds/5}) covers what serves the row: {@code /worlds/05},
     * {@code /worlds/+5} and {@code /worlds/%2B5} are no World.
     *
     * @param request a request routed to a template with {@code {id}}
     * @throws HttpException 404 when it is not an id the table has (the resource does not exist):
     *                       {@code no World with id '05'}, {@code no World with id 0; ids are 1..10000}
     */
    public static int worldId(Request request) {
        long id;
        try {
            id = request.pathParamLong("id");
        } catch (HttpException notAnId) {
            if (notAnId.status() != 404) throw notAnId;
            throw new HttpException(404, "no World with id '" + request.pathParam("id") + "'");
        }
        if (id < 1 || id > DemoDb.WORLD_ROWS) throw new HttpException(404, "no World with id " + id + "; ids are 1.." + DemoDb.WORLD_ROWS);
        return (int) id;
    }

    /**
     * The {@code delay} of {@code /hello}: milliseconds to sleep, 0 (no sleep) when absent or empty.
     *
     * @param raw the decoded parameter value, or null when absent
     * @throws HttpException 400 when it is not an integer in 0..60000
     */
    public static int delayMs(String raw) {
        if (raw == null || raw.isEmpty()) return 0;
        int ms;
        try {
            ms = Integer.parseInt(raw.trim());
        } catch (NumberFormatException e) {
            throw new HttpException(400, "delay must be an integer number of milliseconds, got '" + raw + "'");
        }
        if (ms < 0 || ms > MAX_DELAY_MS) throw new HttpException(400, "delay must be 0.." + MAX_DELAY_MS + " ms, got " + ms);
        return ms;
    }
}

package kiln.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.logging.Logger;

import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Query;
import kiln.db.Table;

/**
 * The TechEmpower schema on a {@link Db}: {@code world} (id → randomNumber) and {@code fortune}
 * (id → message), with the queries the test types need. Every method that returns a
 * {@link Query} builds it with all random choices already made, so write queries are safe to
 * re-run (see {@link Query}).
 *
 * <p>Source of the rows and rules: TechEmpower Framework Benchmarks, "Project Information /
 * Framework Tests Overview" (test types 2-6) and its create-postgres.sql.
 */
public final class DemoDb {
    private static final Logger LOG = Logger.getLogger(DemoDb.class.getName());

    /** Rows in the World table. */
    public static final int WORLD_ROWS = 10_000;

    /** The 12 standard fortunes, index i holding id i+1, text exact. */
    static final String[] FORTUNES = {
        "fortune: No such file or directory",
        "A computer scientist is someone who fixes things that aren't broken.",
        "After enough decimal places, nobody gives a damn.",
        "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
        "A computer program does what you tell it to do, not what you want it to do.",
        "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom Christaensen",
        "Any program that runs right is obsolete.",
        "A list is only as strong as its weakest link. \u2014 Donald Knuth",
        "Feature: A bug with seniority.",
        "Computers make very fast, very accurate mistakes.",
        "<script>alert(\"This should not be displayed in a browser alert box.\");</script>",
        "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1\u30de\u30fc\u30af",
    };

    private final Db db;
    private final Table<Integer, Integer> worlds;
    private final Table<Integer, String> fortunes;
    /** The World table's committed changes (set when the tables are filled), behind the live endpoints. */
    private LiveWorlds live;

    private DemoDb(Db db) {
        this.db = db;
        this.worlds = db.table("world", Codec.INT, Codec.INT);
        this.fortunes = db.table("fortune", Codec.INT, Codec.STRING);
    }

    /**
     * Opens the demo tables, creating and filling them (10,000 worlds, 12 fortunes) in one durable
     * write if the world table is empty.
     */
    public static DemoDb open(Db db) {
        DemoDb demo = new DemoDb(db);
        long rows = db.read(txn -> demo.worlds.count(txn)).join();
        if (rows == 0) {
            int[] numbers = new int[WORLD_ROWS + 1];
            for (int id = 1; id <= WORLD_ROWS; id++) numbers[id] = randomNumber();
            db.write(txn -> {
                for (int id = 1; id <= WORLD_ROWS; id++) demo.worlds.put(txn, id, numbers[id]);
                for (int i = 0; i < FORTUNES.length; i++) demo.fortunes.put(txn, i + 1, FORTUNES[i]);
                return null;
            }).join();
            LOG.info("created the demo schema in " + db.location() + ": " + WORLD_ROWS + " worlds, " + FORTUNES.length + " fortunes");
        }
        demo.live = new LiveWorlds(db.changeFeed(demo.worlds, LiveWorlds.WINDOW));  // after the filling: not an event
        return demo;
    }

    /** @return the World table's live events ({@code /updates/events}, {@code /worlds/{id}/events}) */
    LiveWorlds live() {
        return live;
    }

    /** @return the database these tables live in */
    public Db db() {
        return db;
    }

    /** @return the world table, id → randomNumber */
    public Table<Integer, Integer> worlds() {
        return worlds;
    }

    /** @return a uniformly random World id, 1..10000 */
    public static int randomId() {
        return ThreadLocalRandom.current().nextInt(1, WORLD_ROWS + 1);
    }

    /** @return a uniformly random randomNumber, 1..10000 */
    public static int randomNumber() {
        return ThreadLocalRandom.current().nextInt(1, WORLD_ROWS + 1);
    }

    /** @return a read query for one World row with a random id (the single query test) */
    public Query<World> randomWorld() {
        return world(randomId());
    }

    /** @return a read query for the World row with {@code id}, 1..10000 (every one exists) */
    public Query<World> world(int id) {
        return txn -> new World(id, worlds.get(txn, id));
    }

    /**
     * @return a read query for {@code n} World rows with random ids, each its own lookup (the multiple
     *         queries test: on PostgreSQL one {@code SELECT} each, in one snapshot)
     */
    public Query<World[]> randomWorlds(int n) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) ids[i] = randomId();
        return txn -> {
            World[] rows = new World[n];
            for (int i = 0; i < n; i++) rows[i] = new World(ids[i], worlds.get(txn, ids[i]));
            return rows;
        };
    }

    /** @return a read query for every fortune in the table, in id order */
    public Query<List<Fortune>> allFortunes() {
        return txn -> {
            List<Fortune> all = new ArrayList<>(16);
            fortunes.scan(txn, (id, message) -> all.add(new Fortune(id, message)));
            return all;
        };
    }

    /**
     * Gives each row a new random randomNumber (chosen now, outside the query) and returns a write
     * query that stores them all and returns the updated rows.
     *
     * @param read rows read earlier in the request
     */
    public Query<World[]> updateWithNewRandomNumbers(World[] read) {
        World[] updated = new World[read.length];
        for (int i = 0; i < read.length; i++) updated[i] = new World(read[i].id, randomNumber());
        return txn -> {
            for (World w : updated) worlds.put(txn, w.id, w.randomNumber);
            return updated;
        };
    }
}

package kiln.demo;

import kiln.db.Db;
import kiln.demo.board.MessageBoard;
import kiln.server.AbstractRouter;
import picocli.CommandLine.Option;

/**
 * {@code --app demo|board}: which app a front end's jar serves, the same on all eight (a picocli
 * mixin each demo main adds). {@code demo}, the default, is the endpoint registry
 * ({@link Endpoints}); {@code board} is the message board of docs/data.md ({@link MessageBoard}),
 * an app like a user's, written once as steps.
 */
public final class AppOption {
    /** The apps a jar can serve. */
    public enum App {
        /** The benchmark endpoints ({@link Endpoints}). */
        demo,
        /** The message board example ({@link MessageBoard}). */
        board
    }

    @Option(names = "--app", paramLabel = "NAME", defaultValue = "demo",
        description = "The app to serve: demo (the endpoints below) or board (the message board of docs/data.md) (default: ${DEFAULT-VALUE}).")
    App app = App.demo;

    /** @return the app chosen */
    public App app() {
        return app;
    }

    /**
     * Registers the chosen app's routes over {@code db} on {@code router}, whichever front end's it is
     * (the demo opens, and on first start fills, its tables).
     *
     * @return {@code router}
     */
    public <R extends AbstractRouter<?, R>> R addTo(R router, Db db) {
        return app == App.board ? MessageBoard.addTo(router, db) : Endpoints.addTo(router, DemoDb.open(db));
    }

    /** @return the usage footer: the demo's endpoints, and the board's routes */
    public static String usage() {
        return Endpoints.usage() + "\nWith --app board:\n" + MessageBoard.USAGE;
    }
}

package kiln.kilim;

import java.util.function.Function;

import kiln.db.Db;
import kiln.demo.AppOption;
import kiln.demo.Endpoints;
import kiln.server.ServerOptions;

/**
 * {@code java -jar kiln-kilim.jar [--port N] [--bind ADDR] [--data DIR] [--threads N] ...}: the demo
 * on Kilim fibers. Opens (and on first start fills) the database, serves the endpoint registry
 * ({@link Endpoints}) with metrics, and on SIGTERM or Ctrl-C stops accepting, finishes requests in
 * flight, commits queued writes and closes LMDB. An app like any user's: {@link KilimMain} with the
 * demo's routes.
 */
public final class KilimDemo {
    private KilimDemo() {
    }

    /**
     * Runs the demo ({@code java -jar kiln-kilim.jar --help} lists the options; {@code --app board} serves the
     * message board instead).
     *
     * @param args kiln's standard options and {@code --app}
     */
    public static void main(String[] args) {
        AppOption app = new AppOption();  // --app board: the message board instead
        KilimMain command = new KilimMain();
        ServerOptions options = ServerOptions.parseOrExit(command, AppOption.usage(), args, app);
        command.start("kiln-kilim", options, routes(options, app));
    }

    /** @return the routes of the app {@code app} names ({@code --app}), with the options' metrics, over a database */
    static Function<Db, Router> routes(ServerOptions options, AppOption app) {
        return db -> app.addTo(new Router(options.metrics(db)), db);
    }
}

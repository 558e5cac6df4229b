package kiln.loom;

import kiln.demo.AppOption;
import kiln.demo.Endpoints;
import kiln.server.ServerOptions;

/**
 * {@code java -jar kiln-loom.jar [--port N] [--bind ADDR] [--data DIR] [--threads N] ...} on JDK 21
 * or newer: the demo on virtual threads, one per connection. Opens (and on first start fills) the
 * database, serves the endpoint registry ({@link Endpoints}) with metrics, and on SIGTERM or Ctrl-C
 * stops accepting, finishes requests in flight, commits queued writes and closes LMDB. An app like
 * any user's: {@link LoomMain} with the demo's routes.
 */
public final class LoomDemo {
    private LoomDemo() {
    }

    /**
     * Runs the demo ({@code java -jar kiln-loom.jar --help} lists the options; {@code --app board} serves the
     * message board instead).
     *
     * @param args kiln's standard options and {@code --app}
     */
    public static void main(String[] args) {
        AppOption app = new AppOption();  // --app board: the message board instead
        LoomMain command = new LoomMain();
        ServerOptions options = ServerOptions.parseOrExit(command, AppOption.usage(), args, app);
        command.start("kiln-loom", options, db -> app.addTo(new Router(options.metrics(db)), db));
    }
}

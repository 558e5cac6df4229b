package kiln.undertow;

import kiln.demo.AppOption;
import kiln.server.Launcher;
import kiln.server.ModeOptions;
import kiln.server.ServerOptions;
import kiln.server.StepRouter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code java -jar kiln-undertow.jar [--port N] [--bind ADDR] [--data DIR] [--threads N]
 * [--mode async|blocking] [--workers N] [--app demo|board]}: opens (and on first start fills) the
 * database, serves the endpoint registry (or the message board: {@link AppOption}) with Undertow's core handlers, and on SIGTERM or Ctrl-C stops accepting, finishes
 * requests in flight, commits queued writes and closes LMDB.
 */
@Command(name = "kiln-undertow", mixinStandardHelpOptions = true, version = "kiln-undertow 0.1.0",
    description = "The kiln demo endpoints on Undertow 2 core handlers (no servlet).%n"
        + "--threads sets Undertow's IO threads (XNIO selector threads, which also accept connections).")
public final class UndertowMain {
    static final String NAME = "kiln-undertow";

    @Mixin
    ServerOptions server;

    @Mixin
    ModeOptions threading;

    public static void main(String[] args) {
        UndertowMain command = new UndertowMain();
        AppOption app = new AppOption();
        ServerOptions options = ServerOptions.parseOrExit(command, AppOption.usage(), args, app);
        command.threading.refuseLoom(NAME);
        Launcher.run(NAME, options, db -> {
            UndertowServer server = new UndertowServer(options, command.threading.mode, command.threading.workers,
                app.addTo(new StepRouter(options.metrics(db)), db));
            server.start();
            return server;
        });
    }
}

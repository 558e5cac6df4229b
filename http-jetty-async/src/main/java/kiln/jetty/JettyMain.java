package kiln.jetty;

import kiln.demo.AppOption;
import kiln.server.Launcher;
import kiln.server.ModeOptions;
import kiln.server.ServerOptions;
import kiln.server.StepRouter;
import kiln.server.VirtualThreads;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code java -jar kiln-jetty.jar [--port N] [--bind ADDR] [--data DIR] [--threads N]
 * [--mode async|blocking|loom] [--workers N] [--app demo|board]}: opens (and on first start fills) the
 * database, serves the endpoint registry (or the message board: {@link AppOption}) on embedded Jetty, and on SIGTERM or Ctrl-C stops accepting, finishes requests in
 * flight, commits queued writes and closes LMDB. {@code --mode loom} needs JDK 21 or newer and
 * exits 1 with one line naming the JDK to use on an older one.
 */
@Command(name = "kiln-jetty", mixinStandardHelpOptions = true, version = "kiln-jetty 0.1.0",
    description = "The kiln demo endpoints on embedded Jetty 12 (servlet).%n"
        + "--threads sets Jetty's selector (IO) threads; connections are accepted by the selectors.")
public final class JettyMain {
    static final String NAME = "kiln-jetty";

    @Mixin
    ServerOptions server;

    @Mixin
    ModeOptions threading;

    public static void main(String[] args) {
        JettyMain command = new JettyMain();
        AppOption app = new AppOption();
        ServerOptions options = ServerOptions.parseOrExit(command, AppOption.usage(), args, app);
        if (command.threading.mode == ModeOptions.Mode.LOOM) VirtualThreads.requireOrExit(NAME);
        Launcher.run(NAME, options, db -> {
            JettyServer server = new JettyServer(options, command.threading.mode, command.threading.workers,
                app.addTo(new StepRouter(options.metrics(db)), db));
            server.start();
            return server;
        });
    }
}

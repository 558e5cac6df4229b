package kiln.comsat;

import kiln.demo.AppOption;
import kiln.server.Launcher;
import kiln.demo.Params;
import kiln.demo.WarmUp;
import kiln.server.ServerOptions;
import kiln.server.StepRouter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code java -jar kiln-comsat.jar [--port N] [--bind ADDR] [--data DIR] [--threads N] [--app demo|board]} on JDK 17:
 * opens (and on first start fills) the database, serves the endpoint registry with Comsat's
 * FiberHttpServlet on embedded Jetty 9.4, and on SIGTERM or Ctrl-C stops accepting, finishes
 * requests in flight, commits queued writes and closes LMDB.
 *
 * <p>The jar starts Quasar's agent itself ({@link LauncherAgent}) and opens java.lang through its
 * manifest; run from classes instead, the JVM needs
 * {@code -javaagent:kiln-quasar-agent.jar --add-opens java.base/java.lang=ALL-UNNAMED}.
 * {@link Preflight} checks both.
 */
@Command(name = "kiln-comsat", mixinStandardHelpOptions = true, version = "kiln-comsat 0.1.0",
    description = "The kiln demo endpoints served by Quasar fibers: Comsat's FiberHttpServlet on embedded Jetty 9.4. JDK 17 only.%n"
        + "--threads sets the fiber scheduler's carrier threads.")
public final class ComsatMain {
    static final String NAME = "kiln-comsat";
    private static final String FIBER_PARALLELISM = "co.paralleluniverse.fibers.DefaultFiberPool.parallelism";
    /**
     * Comsat's timeout for the async request each fiber answers, ms. Without it Jetty's default (30 s)
     * ends a {@code /hello?delay=MS} longer than that with an error instead of its answer.
     */
    private static final String ASYNC_TIMEOUT = "co.paralleluniverse.fibers.servlet.FiberHttpServlet.asyncTimeout";

    @Mixin
    ServerOptions server;

    public static void main(String[] args) {
        AppOption app = new AppOption();
        ServerOptions options = ServerOptions.parseOrExit(new ComsatMain(), AppOption.usage(), args, app);
        String problem = Preflight.problem();
        if (problem != null) ServerOptions.fail(NAME, problem);
        // Read once each: when the first fiber creates Quasar's default scheduler, and when the
        // servlet's class loads. Both happen after this.
        if (System.getProperty(FIBER_PARALLELISM) == null) {
            System.setProperty(FIBER_PARALLELISM, Integer.toString(options.threadsOrDefault()));
        }
        if (System.getProperty(ASYNC_TIMEOUT) == null) {
            System.setProperty(ASYNC_TIMEOUT, Long.toString(Params.MAX_DELAY_MS + 30_000L));
        }
        Launcher.run(NAME, options, db -> {
            ComsatServer server = new ComsatServer(options, app.addTo(new StepRouter(options.metrics(db)), db));
            server.start();
            // Quasar instruments each class as it loads: without this, a client's first requests wait seconds for it
            if (app.app() == AppOption.App.demo) WarmUp.run(server.port());
            return server;
        });
    }
}

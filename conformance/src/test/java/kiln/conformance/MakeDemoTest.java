package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * {@code make demo ARGS="..."} hands the user's server options to the jar, with and without
 * {@code APP}, after the front end's own arguments from frontends.conf. Checked with
 * {@code make -n} (the command line make would run; nothing is built or started).
 */
class MakeDemoTest {
    /** @return the {@code exec java ...} line {@code make -n demo VARS...} prints */
    private static String demoCommand(String... vars) throws Exception {
        List<String> make = new ArrayList<>(List.of("make", "-s", "-n", "-C", Dirs.repo().toString(), "demo"));
        make.addAll(List.of(vars));
        Command dry = Command.run(60, make);
        assertEquals(0, dry.exitCode, dry.output);
        return dry.output.lines().filter(l -> l.startsWith("exec ")).findFirst()
            .orElseThrow(() -> new AssertionError("no exec line in:\n" + dry.output)).trim();
    }

    @Test
    void argsReachAnInTreeExampleRunWithApp() throws Exception {
        String cmd = demoCommand("APP=kiln.kilim.example.HitCounter", "ARGS=--threads 2 --blocked-carrier-ms 50");
        assertTrue(cmd.contains(" kiln.kilim.example.HitCounter --port 8080 "), cmd);
        assertTrue(cmd.endsWith(" --threads 2 --blocked-carrier-ms 50"), cmd);
    }

    /** The examples are not in the front ends' jars: APP runs from SERVER's examples module's own jar. */
    @Test
    void anInTreeExampleRunsFromItsExamplesJar() throws Exception {
        String fibers = demoCommand("APP=kiln.kilim.example.TodoApp");
        assertTrue(fibers.contains(" -cp examples-kilim/target/kiln-examples-kilim.jar kiln.kilim.example.TodoApp "), fibers);
        String virtualThreads = demoCommand("SERVER=loom", "APP=kiln.loom.example.TodoApp");
        assertTrue(virtualThreads.contains(" -cp examples-loom/target/kiln-examples-loom.jar kiln.loom.example.TodoApp "), virtualThreads);
    }

    @Test
    void argsFollowTheFrontEndsOwnArgumentsWithoutApp() throws Exception {
        String cmd = demoCommand("SERVER=jetty-async", "ARGS=--workers 2");
        assertTrue(cmd.endsWith(" --mode async --workers 2"), cmd);
        assertTrue(demoCommand("PORT=9090").endsWith("--data data"), "no ARGS, nothing added");
    }
}

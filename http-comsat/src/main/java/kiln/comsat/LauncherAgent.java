package kiln.comsat;

import java.lang.instrument.Instrumentation;

import co.paralleluniverse.fibers.instrument.JavaAgent;

/**
 * Starts Quasar's instrumentation agent for {@code java -jar kiln-comsat.jar}: the jar's manifest
 * names this class as its {@code Launcher-Agent-Class}, which the JVM runs before {@link ComsatMain},
 * with the class-retransformation capability the manifest grants. So the Comsat jar starts with the
 * same command as every other front end. When {@code -javaagent:kiln-quasar-agent.jar} started
 * Quasar already (the tests run from classes that way), this does nothing.
 *
 * <p>The Quasar classes in the jar are those of kiln-quasar-agent (quasar-core with ASM 9 and the
 * ASM9 API level), never the original quasar-core jar.
 */
public final class LauncherAgent {
    /**
     * Quasar's agent option (after {@code -javaagent:kiln-quasar-agent.jar=}, see http-comsat's pom)
     * that keeps it from instrumenting the Prometheus client, kiln's database (on LMDB, kiln.db.lmdb, and on
     * PostgreSQL with PgJDBC and HikariCP, which blocks on read threads of its own) and the demo's
     * message board: nothing there suspends (a fiber waits for the database through a future, in the front
     * end; the board's steps return futures), and Quasar's analyzer fails on the first two, and warned
     * about two of the board's lambdas at every start ("[quasar] ERROR: Unable to instrument class": on
     * {@code Histogram$DataPoint}, on HikariCP's {@code UtilityElf}, and on {@code kiln.db.Db}'s try-with-resources, since Quasar counts
     * every {@code AutoCloseable.close()} call as a suspendable call site).
     */
    static final String EXCLUSIONS = "x(io.prometheus.**;kiln.db;kiln.db.lmdb;kiln.db.postgresql;com.zaxxer.**;org.postgresql.**;kiln.demo.board)";

    private LauncherAgent() {
    }

    /**
     * @param args passed to Quasar's agent (its option letters, e.g. "v" for verbose) after
     *             {@link #EXCLUSIONS}; may be null
     * @param inst the JVM's instrumentation
     */
    public static void agentmain(String args, Instrumentation inst) {
        // On an unsupported JDK Quasar's transformer would only print errors for every class;
        // ComsatMain explains the problem instead.
        if (!Preflight.supportedJdk(Runtime.version().feature()) || JavaAgent.isActive()) return;
        JavaAgent.premain(args == null ? EXCLUSIONS : EXCLUSIONS + args, inst);
    }
}

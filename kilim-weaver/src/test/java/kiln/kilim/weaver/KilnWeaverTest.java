package kiln.kilim.weaver;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.FieldNode;
import org.objectweb.asm.tree.RecordComponentNode;

import kilim.Fiber;
import kilim.analysis.ClassInfo;
import kilim.analysis.ClassWeaver;
import kilim.analysis.KilimContext;
import kilim.mirrors.CachedClassMirrors;

/**
 * The weaver driver on classes compiled here with javac: records and sealed types weave and keep
 * what Kilim's ClassWeaver drops, and a class that cannot be woven fails with one message naming
 * it, its method and what to change.
 */
class KilnWeaverTest {
    @TempDir
    Path dir;

    private static final String SEALED = "package demo;\n"
        + "import kilim.*;\n"
        + "public sealed interface Job permits Sleep {\n"
        + "  long run() throws Pausable;\n"
        + "}\n";
    private static final String RECORD = "package demo;\n"
        + "import kilim.*;\n"
        + "public record Sleep(long ms, String why) implements Job {\n"
        + "  public long run() throws Pausable { Task.sleep(ms); return ms; }\n"
        + "}\n";

    @Test
    void recordsAndSealedTypesWeaveAndKeepTheirAttributes() throws Exception {
        Path classes = compile(Map.of("demo/Job.java", SEALED, "demo/Sleep.java", RECORD));

        KilnWeaver.Report report = KilnWeaver.weave(classes, classpath());

        assertEquals(List.of("demo.Job", "demo.Sleep"), report.woven);
        assertEquals(List.of("demo.Job: permitted subclasses", "demo.Sleep: record components"), report.restored);
        ClassNode job = read(classes.resolve("demo/Job.class"));
        ClassNode sleep = read(classes.resolve("demo/Sleep.class"));
        assertTrue(isWoven(job) && isWoven(sleep));
        assertEquals(List.of("demo/Sleep"), job.permittedSubclasses);
        assertEquals(List.of("ms", "why"), sleep.recordComponents.stream().map(c -> c.name).toList());
        assertEquals(List.of("J", "Ljava/lang/String;"), sleep.recordComponents.stream().map(c -> c.descriptor).toList());
        assertTrue(sleep.methods.stream().anyMatch(m -> m.name.equals("run") && m.desc.equals("(Lkilim/Fiber;)J")), "the Fiber variant");

        // Weaving again leaves woven classes alone.
        assertEquals(List.of(), KilnWeaver.weave(classes, classpath()).woven);
    }

    /** Why the driver puts attributes back: Kilim's own ClassWeaver, even at ASM API level 9, loses them. */
    @Test
    void kilimsClassWeaverAloneDropsTheRecordAttribute() throws Exception {
        Path classes = compile(Map.of("demo/Job.java", SEALED, "demo/Sleep.java", RECORD));
        byte[] original = Files.readAllBytes(classes.resolve("demo/Sleep.class"));
        assertEquals(2, read(classes.resolve("demo/Sleep.class")).recordComponents.size());

        ClassWeaver weaver = new ClassWeaver(new KilimContext(new CachedClassMirrors(loader(classes))), new ByteArrayInputStream(original));
        weaver.weave();
        ClassInfo woven = weaver.getClassInfos().get(0);

        ClassNode node = new ClassNode(Opcodes.ASM9);
        new ClassReader(woven.bytes).accept(node, 0);
        assertTrue(isWoven(node));
        assertNull(node.recordComponents, "ClassWeaver.accept copies no record components");
        List<String> put = new ArrayList<>();
        List<RecordComponentNode> restored = read(KilnWeaver.restoreDroppedAttributes(weaver.classFlow, woven.bytes, put)).recordComponents;
        assertEquals(List.of("record components"), put);
        assertEquals(2, restored.size());
    }

    @Test
    void aPausableCallInSynchronizedNamesTheClassAndMethodAndWhatToChange() throws Exception {
        Path classes = compile(Map.of(
            "demo/Counter.java", "package demo;\n"
                + "import kilim.*;\n"
                + "public class Counter {\n"
                + "  private int n;\n"
                + "  public int fine() throws Pausable { Task.yield(); return n; }\n"
                + "  public void tick(String why, long times) throws Pausable {\n"
                + "    synchronized (this) { n++; Task.sleep(1); }\n"
                + "  }\n"
                + "}\n",
            "demo/Job.java", SEALED, "demo/Sleep.java", RECORD));

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, classpath()));

        String expected = "Kilim cannot weave demo.Counter.tick(String, long) at Counter.java:7 (class demo.Counter): Error: Can not call pausable nethods"
            + " from within a synchronized block; Caller: demo.Counter.tick(Ljava/lang/String;J)V; Callee: sleep\n"
            + "    what to change: move the pausable call out of the synchronized block";
        assertTrue(e.getMessage().startsWith(expected), e.getMessage());
        assertEquals(2, e.getMessage().split("\n").length, "one failure, two lines, no stack trace: " + e.getMessage());
        // The classes that could be woven were.
        assertTrue(isWoven(read(classes.resolve("demo/Sleep.class"))));
    }

    @Test
    void aPausableCallInSynchronizedInALambdaHandlerNamesTheEnclosingMethodAndLine() throws Exception {
        Path classes = compile(Map.of(
            "demo/Routes.java", "package demo;\n"
                + "import kilim.*;\n"
                + "public class Routes {\n"
                + "  public interface Handler { String handle(String req) throws Pausable; }\n"
                + "  private final Object lock = new Object();\n"
                + "  public Handler routes() {\n"
                + "    return req -> {\n"
                + "      synchronized (lock) { Task.sleep(1); }\n"
                + "      return req;\n"
                + "    };\n"
                + "  }\n"
                + "}\n"));

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, classpath()));

        assertTrue(e.getMessage().startsWith("Kilim cannot weave a lambda in demo.Routes.routes at Routes.java:8 (lambda$routes$0)"
            + " (class demo.Routes): Error: Can not call pausable nethods from within a synchronized block"), e.getMessage());
        assertTrue(e.getMessage().contains("what to change: move the pausable call out of the synchronized block"), e.getMessage());
    }

    /**
     * A write query ({@code kiln.db.Query}: {@code R run(Txn) throws Exception}, not pausable) that
     * pauses: its transaction belongs to the writer thread, so the build must refuse it.
     */
    @Test
    void aPauseInANonPausableLambdaSuchAsAWriteQueryIsRefused() throws Exception {
        Path classes = compile(Map.of(
            "demo/Writes.java", "package demo;\n"
                + "import kilim.*;\n"
                + "public class Writes {\n"
                + "  public interface Query { Object run(Object txn) throws Exception; }\n"
                + "  public Query update() {\n"
                + "    return txn -> {\n"
                + "      Task.sleep(1);\n"
                + "      return txn;\n"
                + "    };\n"
                + "  }\n"
                + "}\n"));

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, classpath()));

        assertTrue(e.getMessage().startsWith("Kilim cannot weave a lambda in demo.Writes.update at Writes.java:7 (lambda$update$0)"), e.getMessage());
        assertTrue(e.getMessage().contains("what to change: add 'throws Pausable' to the method"), e.getMessage());
    }

    /**
     * A pausing lambda passed to {@code forEach} implements {@code java.util.function.Consumer},
     * which the user cannot give {@code throws Pausable}: the advice is the loop, not the throws
     * clause. (javac refuses the bare call, Pausable being a checked exception; wrapping it in a
     * try/catch, the usual answer to that, is what reaches the weaver. A {@code Callable} may throw
     * it as it is.)
     */
    @Test
    void aPauseInALambdaForAJdkInterfaceSuchAsForEachAdvisesAPlainLoop() throws Exception {
        Path classes = compile(Map.of(
            "demo/Each.java", "package demo;\n"
                + "import kilim.*;\n"
                + "import java.util.List;\n"
                + "public class Each {\n"
                + "  public void all(List<String> names) throws Pausable {\n"
                + "    names.forEach(n -> {\n"
                + "      try { Task.sleep(1); } catch (Exception e) { throw new RuntimeException(e); }\n"
                + "    });\n"
                + "  }\n"
                + "  public java.util.concurrent.Callable<String> later() {\n"
                + "    return () -> { Task.sleep(1); return \"done\"; };\n"
                + "  }\n"
                + "}\n"));

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, classpath()));

        String[] lines = e.getMessage().split("\n");
        assertEquals(4, lines.length, "two failures of two lines: " + e.getMessage());
        int forEach = lines[0].contains("lambda$all$0") ? 0 : 2;
        int callable = 2 - forEach;
        assertTrue(lines[forEach].startsWith("Kilim cannot weave a lambda in demo.Each.all at Each.java:7 (lambda$all$0)"), e.getMessage());
        assertEquals("    what to change: the lambda implements java.util.function.Consumer (passed to java.util.List.forEach), whose accept"
            + " cannot be declared 'throws Pausable', so the lambda cannot pause. Use a plain for loop instead of forEach:"
            + " for (var item : items) { ... }, so that the pause is in the enclosing method's own body (which declares 'throws Pausable')",
            lines[forEach + 1]);
        assertTrue(lines[callable].startsWith("Kilim cannot weave a lambda in demo.Each.later at Each.java:11 (lambda$later$1)"), e.getMessage());
        assertTrue(lines[callable + 1].startsWith("    what to change: the lambda implements java.util.concurrent.Callable, whose call cannot be"
            + " declared 'throws Pausable', so the lambda cannot pause. Make the pausable call in the enclosing method itself"), e.getMessage());
        assertTrue(!e.getMessage().contains("add 'throws Pausable' to the method"), "the advice a Consumer cannot follow: " + e.getMessage());
    }

    /** A pause in a catch block, in a loop, after a try that declares a long and a String. */
    private static final String PAUSE_IN_CATCH = "package demo;\n"
        + "import kilim.*;\n"
        + "public class Retry {\n"
        + "  public static String parse(String in) throws Pausable {\n"
        + "    for (int i = 0; i < 2; i++) {\n"
        + "      try {\n"
        + "        long x = Long.parseLong(in);\n"
        + "        String s = \"v\" + x;\n"
        + "        if (x > 0) return s;\n"
        + "      } catch (NumberFormatException e) {\n"
        + "        Task.sleep(1);\n"
        + "        int k = i * 2;\n"
        + "        if (k > 0) return \"k\" + k;\n"
        + "      }\n"
        + "    }\n"
        + "    return \"end\";\n"
        + "  }\n"
        + "}\n";

    /** The same, as the advice says: a flag in the catch, the pause after it. */
    private static final String PAUSE_AFTER_CATCH = PAUSE_IN_CATCH
        .replace("      } catch (NumberFormatException e) {\n        Task.sleep(1);\n",
            "      } catch (NumberFormatException e) {\n        failed = true;\n      }\n      if (failed) {\n        Task.sleep(1);\n")
        .replace("    for (int i = 0; i < 2; i++) {\n", "    for (int i = 0; i < 2; i++) {\n      boolean failed = false;\n");

    /**
     * Kilim 2.0.2 weaves this without complaint into code the JVM refuses when the class loads
     * (VerifyError: Bad local variable type). The build now fails instead, naming the method.
     */
    @Test
    void codeKilimWeavesWrongFailsTheBuildNamingTheMethod() throws Exception {
        Path classes = compile(Map.of("demo/Retry.java", PAUSE_IN_CATCH));
        byte[] javacs = Files.readAllBytes(classes.resolve("demo/Retry.class"));

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, classpath()));

        assertTrue(e.getMessage().startsWith("Kilim cannot weave demo.Retry.parse(String) (class demo.Retry): the woven bytecode does not verify"),
            e.getMessage());
        assertTrue(e.getMessage().contains("VerifyError: Bad local variable type"), e.getMessage());
        assertTrue(e.getMessage().contains("what to change: do not pause inside the catch block"), e.getMessage());
        assertArrayEquals(javacs, Files.readAllBytes(classes.resolve("demo/Retry.class")), "the unverifiable class is not written");
    }

    /** Runs Retry.parse in a fiber from a plain thread (this test class itself is not woven). */
    private static final String RUNNER = "package demo;\n"
        + "public class Runner {\n"
        + "  public static Object run() {\n"
        + "    return kilim.Task.spawn(() -> Retry.parse(\"7\") + \" \" + Retry.parse(\"x\")).joinb().result;\n"
        + "  }\n"
        + "}\n";

    @Test
    void theAdvisedRewriteWeavesAndRuns() throws Exception {
        Path classes = compile(Map.of("demo/Retry.java", PAUSE_AFTER_CATCH, "demo/Runner.java", RUNNER));

        assertEquals(List.of("demo.Retry", "demo.Runner"), KilnWeaver.weave(classes, classpath()).woven);

        try (URLClassLoader woven = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
            Class<?> retry = woven.loadClass("demo.Retry");
            assertEquals(Boolean.TRUE, retry.getField(KilnWeaver.WOVEN_FIELD).get(null));
            retry.getMethod("parse", String.class, Fiber.class);
            assertEquals("v7 k2", woven.loadClass("demo.Runner").getMethod("run").invoke(null));
        }
    }

    @Test
    void aPausableConstructorIsNamed() throws Exception {
        Path classes = compile(Map.of("demo/Slow.java", "package demo;\n"
            + "import kilim.*;\n"
            + "public class Slow {\n"
            + "  public Slow(int ms) throws Pausable { Task.sleep(ms); }\n"
            + "}\n"));

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, classpath()));

        assertTrue(e.getMessage().startsWith("Kilim cannot weave demo.Slow.<init>(int) at Slow.java:4 (class demo.Slow): Constructors cannot be declared Pausable"),
            e.getMessage());
        assertTrue(e.getMessage().contains("what to change: a constructor cannot pause"), e.getMessage());
    }

    @Test
    void aClassFileTooNewForTheWeaversAsmIsNamed() throws Exception {
        Path classes = compile(Map.of("demo/Job.java", SEALED, "demo/Sleep.java", RECORD));
        Path job = classes.resolve("demo/Job.class");
        byte[] bytes = Files.readAllBytes(job);
        bytes[6] = 0;
        bytes[7] = 99; // class file major version 99
        Files.write(job, bytes);

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, classpath()));

        assertTrue(e.getMessage().startsWith("Kilim cannot weave class demo.Job: IllegalArgumentException: Unsupported class file major version 99\n"
            + "    what to change: the weaver's ASM cannot read this class file version"), e.getMessage());
    }

    @Test
    void aClasspathWithoutKilimIsNamed() throws Exception {
        Path classes = compile(Map.of("demo/Job.java", SEALED, "demo/Sleep.java", RECORD));

        WeaveException e = assertThrows(WeaveException.class, () -> KilnWeaver.weave(classes, List.of()));

        assertTrue(e.getMessage().contains("kilim.Pausable is not on the classpath"), e.getMessage());
    }

    private Path compile(Map<String, String> sources) throws IOException {
        Path src = dir.resolve("src");
        List<String> args = new ArrayList<>(List.of("-d", dir.resolve("classes").toString(), "-cp", System.getProperty("java.class.path"),
            "--release", "17", "-proc:none"));
        for (Map.Entry<String, String> e : sources.entrySet()) {
            Path file = src.resolve(e.getKey());
            Files.createDirectories(file.getParent());
            Files.writeString(file, e.getValue());
            args.add(file.toString());
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertEquals(0, javac.run(null, null, null, args.toArray(new String[0])), "javac failed");
        return dir.resolve("classes");
    }

    /** What the test itself runs with: the patched Kilim in target/classes, and kilim 2.0.2's jar. */
    private static List<Path> classpath() {
        List<Path> cp = new ArrayList<>();
        for (String element : System.getProperty("java.class.path").split(File.pathSeparator)) cp.add(Path.of(element));
        return cp;
    }

    private static ClassLoader loader(Path classes) throws IOException {
        List<java.net.URL> urls = new ArrayList<>();
        urls.add(classes.toUri().toURL());
        for (Path p : classpath()) urls.add(p.toUri().toURL());
        return new java.net.URLClassLoader(urls.toArray(new java.net.URL[0]), ClassLoader.getPlatformClassLoader());
    }

    private static ClassNode read(Path file) throws IOException {
        return read(Files.readAllBytes(file));
    }

    private static ClassNode read(byte[] bytes) {
        ClassNode node = new ClassNode(Opcodes.ASM9);
        new ClassReader(bytes).accept(node, 0);
        return node;
    }

    private static boolean isWoven(ClassNode node) {
        for (FieldNode f : node.fields) {
            if (f.name.equals(KilnWeaver.WOVEN_FIELD)) return true;
        }
        return false;
    }
}

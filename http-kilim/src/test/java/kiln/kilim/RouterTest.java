package kiln.kilim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import kiln.http.Response;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RouterTest {

    @Test
    void wovenLambdaHandlersAreAccepted() {
        new Router().get("/a", req -> Response.text("a"));
    }

    @Test
    void duplicateRoutesAreRefused() {
        Router r = new Router().get("/a", req -> Response.text("a"));
        assertThrows(IllegalArgumentException.class, () -> r.get("/a", req -> Response.text("b")));
    }

    /**
     * Compiles a handler with plain javac (no weaving), as a user's IDE build would, and checks that
     * registering it fails at once with a message that says how to build it.
     */
    @Test
    void unwovenHandlersAreRefusedWithBuildAdvice(@TempDir Path dir) throws Exception {
        Path src = dir.resolve("src/u/Plain.java");
        Files.createDirectories(src.getParent());
        Files.writeString(src, "package u;\n"
            + "public class Plain implements java.util.function.Supplier<kiln.kilim.Handler> {\n"
            + "  public kiln.kilim.Handler get() {\n"
            + "    return req -> { kilim.Task.sleep(1); return kiln.http.Response.text(\"x\"); };\n"
            + "  }\n"
            + "}\n");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        Path out = dir.resolve("out");
        int rc = javac.run(null, null, null, "-d", out.toString(),
            "-cp", System.getProperty("java.class.path"), src.toString());
        assertEquals(0, rc, "javac failed");
        try (URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()}, getClass().getClassLoader())) {
            @SuppressWarnings("unchecked")
            Supplier<Handler> factory = (Supplier<Handler>) loader.loadClass("u.Plain").getDeclaredConstructor().newInstance();
            Handler unwoven = factory.get();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> new Router().get("/x", unwoven));
            assertTrue(e.getMessage().contains("not woven") && e.getMessage().contains("mvn package"), e.getMessage());
        }
        assertTrue(List.of(out.toFile().list()).contains("u") && new File(out.toFile(), "u/Plain.class").isFile());
    }
}

package kiln.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The rule between kiln's HTTP API and its front-end interface: {@code kiln.http} is what an app
 * uses (requests, responses, errors, streamed bodies, JSON); {@code kiln.http.spi} is what a front end
 * uses to serve a connection (the connection state machine, the parser, the response writer, the
 * route table). The API never reaches into the interface, and no app does either: the demo, the
 * in-tree examples and the starter templates.
 */
class ApiLayerTest {
    /** The module directory's parent: the repository, where Maven runs this test from {@code http/}. */
    private static final Path REPO = Path.of("..");

    /** @return the files under {@code dir}, down to {@code depth}, whose code (not comments) names {@code kiln.http.spi} */
    private static List<String> namingSpi(Path dir, int depth) throws IOException {
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(dir, depth)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
                String code = Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
                if (code.contains("kiln.http.spi")) found.add(REPO.relativize(f).toString());
            }
        }
        return found;
    }

    @Test
    void theApiPackageDoesNotReachIntoTheFrontEndInterface() throws IOException {
        assertEquals(List.of(), namingSpi(REPO.resolve("http/src/main/java/kiln/http"), 1));
    }

    @Test
    void appsUseOnlyTheApi() throws IOException {
        List<Path> apps = List.of(REPO.resolve("demo/src/main/java"), REPO.resolve("examples-kilim/src/main/java"),
            REPO.resolve("examples-loom/src/main/java"), REPO.resolve("starter"));
        for (Path app : apps) {
            assertTrue(Files.isDirectory(app), "no " + app + ": the list of apps is out of date");
            assertEquals(List.of(), namingSpi(app, Integer.MAX_VALUE), "apps use kiln.http, not kiln.http.spi");
        }
    }
}

package kiln.kilim.example;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Keeps an example in the handler guide ({@value #PAGE}) identical to compiled code: the lines between
 * README-BEGIN and README-END.
 */
final class ReadmeExample {
    static final Path REPO = Path.of(System.getProperty("user.dir")).getParent();
    /** The page that shows the examples, from the repository root. */
    static final String PAGE = "docs/handlers.md";

    private ReadmeExample() {
    }

    /** Asserts that {@value #PAGE} contains the marked part of {@code source} (a path from the repository root), dedented. */
    static void assertInReadme(String source) throws IOException {
        String code = Files.readString(REPO.resolve(source));
        int b = code.indexOf("// README-BEGIN\n");
        int e = code.indexOf("// README-END");
        assertTrue(b >= 0 && e > b, "README markers missing in " + source);
        String example = dedent(code.substring(code.indexOf('\n', b) + 1, code.lastIndexOf('\n', e)));
        String readme = Files.readString(REPO.resolve(PAGE));
        assertTrue(readme.contains(example), PAGE + " must contain the code between README-BEGIN and README-END of "
            + source + ", verbatim:\n" + example);
    }

    /** @return the marked lines' count, for the README's claims */
    static long lines(String source) throws IOException {
        String code = Files.readString(REPO.resolve(source));
        return code.substring(code.indexOf("// README-BEGIN"), code.indexOf("// README-END")).lines().count() - 1;
    }

    private static String dedent(String block) {
        List<String> lines = Arrays.asList(block.split("\n", -1));
        int indent = lines.stream().filter(l -> !l.isBlank())
            .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
        return lines.stream().map(l -> l.isBlank() ? "" : l.substring(indent)).collect(Collectors.joining("\n")).strip();
    }
}

package kiln.kilim.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The data-model guide's code ({@value #PAGE}) compiles against kiln as it is: each {@code ```java}
 * block of the page goes into a frame of its own below (the class or method it would live in, with
 * the board's tables and records as fields), and javac compiles them all. A {@code ...} in a block
 * stands for code the guide leaves out: an expression ({@code User author = ...;}), or a statement
 * where nothing follows it on its line ({@code for (...) ...}).
 *
 * <p>A new block needs a frame: the test fails naming its first line until {@link #FRAMES} has one,
 * keyed by how the block begins.
 */
class DataGuideTest {
    static final String PAGE = "docs/data.md";

    /** What every frame imports: kiln's API as an app on Kilim fibers sees it, and the board's records. */
    private static final String IMPORTS = """
        package guide;

        import static kiln.kilim.Fibers.await;

        import java.nio.file.Path;
        import java.time.Duration;
        import java.time.Instant;
        import java.util.ArrayList;
        import java.util.LinkedHashMap;
        import java.util.List;
        import java.util.Map;
        import kiln.db.*;
        import kiln.db.lmdb.LmdbEngine;
        import kiln.demo.board.MessageBoard.Message;
        import kiln.demo.board.MessageBoard.User;
        import kiln.http.*;
        import kiln.kilim.Router;
        import kiln.server.Step;
        """;

    /**
     * The board's data model and the handler's variables, as fields, so that a block may declare any
     * of them again (a local or a lambda's parameter hides a field), and the app's helpers.
     */
    private static final String BOARD = IMPORTS + """
        abstract class Board {
            Db db; Txn txn; Request req; Path dir;
            String room; long id; Message m; String text; long at; String token; long userId; String key; Long value;
            Table<Long, User> users; Index<String, Long, User> byEmail; Table<String, Long> sessions;
            Table<Tuple, Message> messages; Index<Tuple, Tuple, Message> byAuthor; ChangeFeed<Tuple, Message> feed;
            IdempotencyKeys<Message> posted; Sequence messageIds; Table<String, Long> counts;
            record Event(long startsAt, long id, String title) {}
            Table<Tuple, Event> events;

            static Response page(Page<Tuple, ?> page) { return Response.json(page.rows()); }
            static <T> T hole() { throw new AssertionError("left out in the guide"); }
        }
        """;

    /** A frame per block, by how the block begins: {@code $BLOCK} is where the block goes, {@code $NAME} the class. */
    private static final Map<String, String> FRAMES = new LinkedHashMap<>();

    static {
        String statements = IMPORTS + "class $NAME extends Board { Object run() throws Exception {\n$BLOCK\nreturn null; } }\n";
        String returning = IMPORTS + "class $NAME extends Board { Object run() throws Exception {\n$BLOCK\n} }\n";
        String routes = IMPORTS + "class $NAME extends Board { Router routes() { return new Router()\n$BLOCK\n; } }\n";
        String members = IMPORTS + "class $NAME {\n$BLOCK\n}\n";
        FRAMES.put("Table<Long, User> users = db.table(", statements);             // the data model
        FRAMES.put("messages.put(txn, Tuple.of(room, id), m);", statements);        // tuples
        FRAMES.put(".get(\"/rooms/{room}/messages\", req -> {", routes);            // a page of a range
        FRAMES.put("static Response page(Page<Tuple, Message> page) {", members);   // the app's page helper
        FRAMES.put(".get(\"/events/upcoming\", req -> {", routes);                  // bounds that move
        FRAMES.put("Index<String, Long, User> byEmail = db.uniqueIndex(", statements);
        FRAMES.put("Table<String, Long> sessions = db.expiringTable(", statements);
        FRAMES.put("IdempotencyKeys<Message> posted = db.idempotencyKeys(", returning);
        FRAMES.put("PrefixFeed<Tuple, Message> room = feed.prefix(", returning);
        FRAMES.put("Db local = Db.open(", statements);                              // the engines
    }

    private static final Pattern BLOCK = Pattern.compile("(?m)^```java\\n(.*?)^```\\s*$", Pattern.DOTALL);
    /** An ellipsis with nothing but a comment after it on its line: a statement left out. */
    private static final Pattern LEFT_OUT_STATEMENT = Pattern.compile("(?<![\\w.])\\.\\.\\.(?=[ \\t]*(//.*)?$)", Pattern.MULTILINE);
    /** Any other ellipsis (not a varargs parameter's): an expression left out. */
    private static final Pattern LEFT_OUT_EXPRESSION = Pattern.compile("(?<![\\w.])\\.\\.\\.(?![\\w.])");

    @Test
    void everyJavaBlockOfTheDataGuideCompilesAgainstKiln(@TempDir Path dir) throws IOException {
        String page = Files.readString(ReadmeExample.REPO.resolve(PAGE));
        Matcher blocks = BLOCK.matcher(page);
        List<Path> sources = new ArrayList<>();
        Map<String, String> firstLines = new LinkedHashMap<>();
        Map<String, Integer> shift = new LinkedHashMap<>();   // a block's line in its frame + shift = its line in the page
        Path board = dir.resolve("guide/Board.java");
        Files.createDirectories(board.getParent());
        Files.writeString(board, BOARD);
        sources.add(board);
        while (blocks.find()) {
            String block = blocks.group(1);
            String first = block.strip().lines().findFirst().orElse("");
            String frame = FRAMES.entrySet().stream().filter(f -> first.startsWith(f.getKey())).map(Map.Entry::getValue)
                .findFirst().orElse(null);
            if (frame == null) fail(PAGE + " has a java block without a frame in DataGuideTest.FRAMES: " + first);
            String name = "Block" + (firstLines.size() + 1);
            firstLines.put(name, first);
            long pageLine = page.substring(0, blocks.start(1)).lines().count() + 1;
            long frameLine = frame.substring(0, frame.indexOf("$BLOCK")).lines().count() + 1;
            shift.put(name, (int) (pageLine - frameLine));
            String code = LEFT_OUT_EXPRESSION.matcher(LEFT_OUT_STATEMENT.matcher(block).replaceAll("hole();")).replaceAll("hole()");
            Path source = dir.resolve("guide/" + name + ".java");
            Files.writeString(source, frame.replace("$NAME", name).replace("$BLOCK", code));
            sources.add(source);
        }
        assertEquals(FRAMES.size(), firstLines.size(), "every frame of DataGuideTest.FRAMES frames a block of " + PAGE
            + " (one was removed or begins otherwise now): " + firstLines.values());

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "the tests run on a JDK");
        StringWriter errors = new StringWriter();
        List<String> options = List.of("--release", "17", "-proc:none", "-classpath", System.getProperty("java.class.path"),
            "-d", dir.resolve("classes").toString());
        var files = javac.getStandardFileManager(null, null, null).getJavaFileObjectsFromPaths(sources);
        boolean compiled = javac.getTask(errors, null, null, options, null, files).call();
        String report = Pattern.compile("\\S*(Block\\d+)\\.java:(\\d+)").matcher(errors.toString()).replaceAll(m ->
            Matcher.quoteReplacement(PAGE + ":" + (Integer.parseInt(m.group(2)) + shift.get(m.group(1)))
                + " (the block that begins '" + firstLines.get(m.group(1)) + "')"));
        assertTrue(compiled, PAGE + "'s code does not compile against kiln:\n" + report);
    }
}

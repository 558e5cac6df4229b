package kiln.conformance;

import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;

/**
 * The rooms of every module stand on floors: no two of a module's top-level types (a room is one,
 * with its nested types; in practice one source file) use each other, straight or round a loop,
 * within a package or across its packages. So each room can be read knowing only those below it,
 * and a change to one never reaches back up. The module floors themselves (which module may depend
 * on which) are the enforcer's rules in each pom; this is the same rule inside each module, checked
 * on its compiled classes ({@code target/classes}, built by the reactor before this module).
 *
 * <p>Where a lower room must call a higher one, it is handed a narrow interface of its own floor (as
 * {@code kiln.db.Table.Upkeep} for the indexes above a table); see docs/architecture.md.
 */
class FloorsTest {
    /**
     * ArchUnit warns of every lambda Kilim's weaver rewrote ("could not find matching origin for
     * synthetic method"), hundreds of lines that say nothing of the rule: kept by this reference.
     */
    private static final Logger ARCHUNIT = Logger.getLogger("com.tngtech.archunit");

    static {
        ARCHUNIT.setLevel(Level.SEVERE);
    }

    /** One slice per top-level type. */
    private static final SliceAssignment ROOMS = new SliceAssignment() {
        @Override
        public SliceIdentifier getIdentifierOf(JavaClass c) {
            if (!c.getPackageName().startsWith("kiln")) return SliceIdentifier.ignore();
            while (c.getEnclosingClass().isPresent()) c = c.getEnclosingClass().get();
            return SliceIdentifier.of(c.getName());
        }

        @Override
        public String getDescription() {
            return "top-level types";
        }
    };

    @TestFactory
    Stream<DynamicTest> everyModuleStandsOnFloors() throws IOException {
        List<String> modules = modules();
        assertTrue(modules.size() > 10, "the parent pom lists the modules: " + modules);
        return modules.stream()
            .filter(m -> Files.isDirectory(Dirs.repo().resolve(m).resolve("src/main/java/kiln")))
            .map(m -> DynamicTest.dynamicTest(m, () -> {
                Path classes = Dirs.repo().resolve(m).resolve("target/classes");
                assertTrue(Files.isDirectory(classes.resolve("kiln")), classes + " is missing: build every module first (make test does)");
                slices().assignedFrom(ROOMS).should().beFreeOfCycles()
                    .because("a room that needs one above it is handed a narrow interface of its own floor, not the room")
                    .check(new ClassFileImporter().importPath(classes));
            }));
    }

    /** @return the modules the parent pom lists */
    private static List<String> modules() throws IOException {
        Matcher m = Pattern.compile("<module>([^<]+)</module>").matcher(Files.readString(Dirs.repo().resolve("pom.xml")));
        return m.results().map(r -> r.group(1)).toList();
    }
}

package kiln.db;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import org.junit.jupiter.api.Test;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;

/**
 * The import rules inside kiln-db, checked on its compiled classes as the module floors are checked
 * on its dependencies (the enforcer's layer rules): the layers name no engine, no room calls back up
 * into the façade, and the rooms (one top-level type a file, its nested types with it) stand on floors:
 * no two of them use each other, straight or round a loop, so each can be read knowing only those
 * below it.
 */
class RoomsTest {
    private static final JavaClasses DB = new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages("kiln.db");

    @Test
    void theLayersNameNoEngine() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("org.lmdbjava..", "org.postgresql..", "com.zaxxer..")
            .because("an engine is a module of its own (kiln-db-lmdb, kiln-db-postgresql), found by URL: KvEngines")
            .check(DB);
    }

    @Test
    void noRoomCallsBackIntoTheFacade() {
        noClasses().that().doNotBelongToAnyOf(Db.class)
            .should().dependOnClassesThat().belongToAnyOf(Db.class)
            .because("Db is the façade over its rooms (Catalog, Writer, Reads, Feeds, OnlineIndexer, DbState...):"
                + " a room that needs another is given it, not the façade")
            .check(DB);
    }

    @Test
    void theRoomsStandOnFloorsWithoutALoop() {
        slices().assignedFrom(ROOMS).should().beFreeOfCycles()
            .because("a room that needs one above it is given a narrow interface of its own floor (Table.Upkeep,"
                + " Table.Recorder, PrefixFeed.Source, Reads' inWriteQuery), not the room")
            .check(DB);
    }

    /** One slice per top-level type of kiln.db: a room, as its source file. */
    private static final SliceAssignment ROOMS = new SliceAssignment() {
        @Override
        public SliceIdentifier getIdentifierOf(JavaClass c) {
            if (!c.getPackageName().equals("kiln.db")) return SliceIdentifier.ignore();
            while (c.getEnclosingClass().isPresent()) c = c.getEnclosingClass().get();
            return SliceIdentifier.of(c.getSimpleName());
        }

        @Override
        public String getDescription() {
            return "the top-level types of kiln.db";
        }
    };
}

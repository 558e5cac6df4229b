package kiln.db;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import org.junit.jupiter.api.Test;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;

/**
 * The import rules inside kiln-db, checked on its compiled classes as the module floors are checked
 * on its dependencies (the enforcer's layer rules): the layers name no engine, and no room calls back
 * up into the façade. That no two rooms use each other round a loop, here as in every module, is
 * conformance's {@code FloorsTest}.
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
}

package kiln.comsat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PreflightTest {
    @TempDir
    Path jvms;

    private Path jdk(String dir, String version) throws IOException {
        Path home = jvms.resolve(dir);
        Path java = Files.createDirectories(home.resolve("bin")).resolve("java");
        Files.writeString(java, "#!/bin/sh\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.writeString(home.resolve("release"), "IMPLEMENTOR=\"Debian\"\nJAVA_VERSION=\"" + version + "\"\n");
        return home;
    }

    @Test
    void findsJdk17sByTheirReleaseFileOncePerRealDirectory() throws IOException {
        Path openjdk17 = jdk("java-17-openjdk-amd64", "17.0.15");
        jdk("temurin-25-jdk-amd64", "25.0.3");
        jdk("java-11-openjdk-amd64", "11.0.2");
        Files.createSymbolicLink(jvms.resolve("java-1.17.0-openjdk-amd64"), openjdk17);
        Files.createDirectories(jvms.resolve("openjdk-17"));  // no bin/java: not a JDK

        assertEquals(List.of(openjdk17.toRealPath()), List.copyOf(Preflight.jdk17s(jvms)));
    }

    @Test
    void findsNothingInAMissingDirectory() {
        assertTrue(Preflight.jdk17s(jvms.resolve("absent")).isEmpty());
    }

    @Test
    void onlyJdk17And18CanRunQuasar() {
        assertTrue(Preflight.supportedJdk(17));
        assertTrue(Preflight.supportedJdk(18));
        assertFalse(Preflight.supportedJdk(19), "JDK 19 removed Thread.target");
        assertFalse(Preflight.supportedJdk(25));
        assertFalse(Preflight.supportedJdk(11));
    }

    /** The test JVM is started the way the module's pom says (agent, java.lang opened). */
    @Test
    void thisTestJvmPassesEveryCheck() {
        assertNull(Preflight.problem());
    }
}

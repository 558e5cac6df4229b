package kiln.build.asm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarInputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

class AsmApiLevelPatchTest {
    private static final String MANIFEST = "Manifest-Version: 1.0\r\nPremain-Class: co.paralleluniverse.fibers.instrument.JavaAgent\r\n\r\n";
    private static final String VISITOR = "co/paralleluniverse/fibers/instrument/SomeVisitor";
    private static final String PLAIN = "co/paralleluniverse/fibers/Plain";

    /** How quasar-agent/ runs it: ASM relocated to Quasar's package and bundled in the jar. */
    private static final AsmApiLevelPatch.Options QUASAR = new AsmApiLevelPatch.Options("co/paralleluniverse/asm/", true, List.of());

    @TempDir
    Path dir;

    @Test
    void raisesAsm7ConstantsToAsm9InClassesThatUseTheRelocatedAsm() throws IOException {
        Path jar = jar(Map.of(
            "co/paralleluniverse/asm/Opcodes.class", opcodes(true),
            VISITOR + ".class", asmUser(VISITOR, 2, true),
            PLAIN + ".class", plainClassWithAsm7Int(PLAIN)));

        AsmApiLevelPatch.Result r = AsmApiLevelPatch.patch(jar, QUASAR);

        assertEquals(2, r.ldcSites);
        assertEquals(1, r.fieldConstants);
        assertEquals(List.of(VISITOR + ".class: 2 LDC, field ASMAPI"), r.classes);
        byte[] patched = read(jar, VISITOR + ".class");
        assertEquals(List.of(AsmApiLevelPatch.ASM9, AsmApiLevelPatch.ASM9), ldcInts(patched));
        assertEquals(AsmApiLevelPatch.ASM9, fieldConstant(patched, "ASMAPI"));
        // A class that does not use ASM keeps its 0x70000: it is not an API level.
        assertEquals(List.of(AsmApiLevelPatch.ASM7), ldcInts(read(jar, PLAIN + ".class")));
    }

    @Test
    void keepsEveryOtherEntryAndTheManifestFirst() throws IOException {
        byte[] opcodes = opcodes(true);
        Path jar = jar(Map.of("co/paralleluniverse/asm/Opcodes.class", opcodes, VISITOR + ".class", asmUser(VISITOR, 1, false)));

        AsmApiLevelPatch.patch(jar, QUASAR);

        assertArrayEquals(opcodes, read(jar, "co/paralleluniverse/asm/Opcodes.class"));
        assertArrayEquals(MANIFEST.getBytes(StandardCharsets.UTF_8), read(jar, "META-INF/MANIFEST.MF"));
        try (JarInputStream in = new JarInputStream(Files.newInputStream(jar))) {
            assertEquals("co.paralleluniverse.fibers.instrument.JavaAgent", in.getManifest().getMainAttributes().getValue("Premain-Class"),
                "JarInputStream finds the manifest only when it is among the first entries");
        }
    }

    @Test
    void failsAndLeavesTheJarAloneWhenThereIsNothingToPatch() throws IOException {
        Path jar = jar(Map.of("co/paralleluniverse/asm/Opcodes.class", opcodes(true), VISITOR + ".class", asmUser(VISITOR, 1, false)));
        AsmApiLevelPatch.patch(jar, QUASAR);
        byte[] once = Files.readAllBytes(jar);

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> AsmApiLevelPatch.patch(jar, QUASAR));

        assertTrue(e.getMessage().contains("found no LDC 0x70000"), e.getMessage());
        assertArrayEquals(once, Files.readAllBytes(jar));
        try (var files = Files.list(dir)) {
            assertEquals(1, files.count(), "the temporary jar is removed");
        }
    }

    @Test
    void failsWhenTheRelocatedAsmIsNotAsm9() throws IOException {
        Path jar = jar(Map.of("co/paralleluniverse/asm/Opcodes.class", opcodes(false), VISITOR + ".class", asmUser(VISITOR, 1, false)));

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> AsmApiLevelPatch.patch(jar, QUASAR));

        assertTrue(e.getMessage().contains("not ASM 9"), e.getMessage());
    }

    @Test
    void extractsThePatchedEntriesIntoADirectoryLeavingOutTheExcludedOnes() throws IOException {
        String kilimVisitor = "kilim/analysis/SomeFlow";
        Path jar = jar(Map.of(
            kilimVisitor + ".class", asmUser(kilimVisitor, "org/objectweb/asm/ClassVisitor", 2, true),
            "kilim/plugins/Mojo.class", asmUser("kilim/plugins/Mojo", "org/objectweb/asm/ClassVisitor", 1, false),
            PLAIN + ".class", plainClassWithAsm7Int(PLAIN)));
        byte[] before = Files.readAllBytes(jar);
        Path out = dir.resolve("classes");
        AsmApiLevelPatch.Options kilim = new AsmApiLevelPatch.Options("org/objectweb/asm/", false, List.of("kilim/plugins/", "META-INF/"));

        AsmApiLevelPatch.Result r = AsmApiLevelPatch.extract(jar, out, kilim);

        assertEquals(List.of(kilimVisitor + ".class: 2 LDC, field ASMAPI"), r.classes);
        byte[] patched = Files.readAllBytes(out.resolve(kilimVisitor + ".class"));
        assertEquals(List.of(AsmApiLevelPatch.ASM9, AsmApiLevelPatch.ASM9), ldcInts(patched));
        assertEquals(AsmApiLevelPatch.ASM9, fieldConstant(patched, "ASMAPI"));
        assertEquals(List.of(AsmApiLevelPatch.ASM7), ldcInts(Files.readAllBytes(out.resolve(PLAIN + ".class"))));
        assertFalse(Files.exists(out.resolve("kilim/plugins")), "excluded prefix");
        assertFalse(Files.exists(out.resolve("META-INF")), "excluded prefix");
        assertArrayEquals(before, Files.readAllBytes(jar), "the source jar is only read");

        // Extracting again (a rebuild without clean) works: it starts from the unpatched jar.
        assertEquals(2, AsmApiLevelPatch.extract(jar, out, kilim).ldcSites);
    }

    @Test
    void extractWritesNothingWhenThereIsNothingToPatch() throws IOException {
        Path jar = jar(Map.of(PLAIN + ".class", plainClassWithAsm7Int(PLAIN)));
        Path out = dir.resolve("classes");

        IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> AsmApiLevelPatch.extract(jar, out, new AsmApiLevelPatch.Options("org/objectweb/asm/", false, List.of())));

        assertTrue(e.getMessage().contains("found no LDC 0x70000"), e.getMessage());
        assertFalse(Files.exists(out));
    }

    /** A jar with a manifest first, then {@code entries} in iteration order. */
    private Path jar(Map<String, byte[]> entries) throws IOException {
        Map<String, byte[]> all = new LinkedHashMap<>();
        all.put("META-INF/MANIFEST.MF", MANIFEST.getBytes(StandardCharsets.UTF_8));
        all.putAll(entries);
        Path jar = dir.resolve("agent.jar");
        try (OutputStream file = Files.newOutputStream(jar); ZipOutputStream out = new ZipOutputStream(file)) {
            for (Map.Entry<String, byte[]> e : all.entrySet()) {
                out.putNextEntry(new ZipEntry(e.getKey()));
                out.write(e.getValue());
                out.closeEntry();
            }
        }
        return jar;
    }

    private static byte[] read(Path jar, String entry) throws IOException {
        try (ZipFile zip = new ZipFile(jar.toFile()); InputStream in = zip.getInputStream(zip.getEntry(entry))) {
            return in.readAllBytes();
        }
    }

    /** The relocated ASM's Opcodes, with or without the ASM9 constant. */
    private static byte[] opcodes(boolean withAsm9) {
        ClassWriter cw = new ClassWriter(0);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_INTERFACE | Opcodes.ACC_ABSTRACT, "co/paralleluniverse/asm/Opcodes", null, "java/lang/Object", null);
        cw.visitField(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC | Opcodes.ACC_FINAL, "ASM7", "I", null, AsmApiLevelPatch.ASM7).visitEnd();
        if (withAsm9) cw.visitField(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC | Opcodes.ACC_FINAL, "ASM9", "I", null, AsmApiLevelPatch.ASM9).visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    /** A class like Quasar's visitors: extends the relocated ClassVisitor and passes ASM7 to it. */
    private static byte[] asmUser(String name, int ldcSites, boolean withField) {
        return asmUser(name, "co/paralleluniverse/asm/ClassVisitor", ldcSites, withField);
    }

    /** A class that extends {@code superName} (an ASM visitor) and passes ASM7 to it. */
    private static byte[] asmUser(String name, String superName, int ldcSites, boolean withField) {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC, name, null, superName, null);
        if (withField) cw.visitField(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC | Opcodes.ACC_FINAL, "ASMAPI", "I", null, AsmApiLevelPatch.ASM7).visitEnd();
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_STATIC, "levels", "()V", null, null);
        mv.visitCode();
        for (int i = 0; i < ldcSites; i++) {
            mv.visitLdcInsn(AsmApiLevelPatch.ASM7);
            mv.visitInsn(Opcodes.POP);
        }
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    private static byte[] plainClassWithAsm7Int(String name) {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC, name, null, "java/lang/Object", null);
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_STATIC, "mask", "()I", null, null);
        mv.visitCode();
        mv.visitLdcInsn(AsmApiLevelPatch.ASM7);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    private static List<Integer> ldcInts(byte[] classBytes) {
        List<Integer> ints = new ArrayList<>();
        new ClassReader(classBytes).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor, String signature, String[] exceptions) {
                return new MethodVisitor(Opcodes.ASM9) {
                    @Override
                    public void visitLdcInsn(Object value) {
                        if (value instanceof Integer) ints.add((Integer) value);
                    }
                };
            }
        }, 0);
        return ints;
    }

    private static Object fieldConstant(byte[] classBytes, String field) {
        Object[] found = {null};
        new ClassReader(classBytes).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public FieldVisitor visitField(int access, String name, String descriptor, String signature, Object value) {
                if (name.equals(field)) found[0] = value;
                return null;
            }
        }, ClassReader.SKIP_CODE);
        return found[0];
    }
}

package kiln.quasar.agent;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * Build step of the repaired Quasar agent, run by exec-maven-plugin right after maven-shade-plugin:
 * raises the ASM API level that Quasar's instrumentation passes to ASM from ASM7 to ASM9, in place,
 * in the shaded agent jar.
 *
 * <p>Why: quasar-core 0.8.0 was compiled against ASM 7, so every visitor it creates says
 * {@code api = Opcodes.ASM7} (0x70000). {@code javac} inlines that constant, so it sits in Quasar's
 * own class files as an {@code LDC 0x70000} (and as the {@code ConstantValue} of
 * {@code QuasarInstrumentor.ASMAPI}). Shading only swaps the ASM library underneath for ASM 9; an
 * ASM 9 reader driving an ASM7-level visitor still throws ("PermittedSubclasses requires ASM9",
 * "Record requires ASM8") on JDK 17's own sealed and record classes, and Quasar then skips the class
 * and leaves methods uninstrumented. Raising the constant to {@link Opcodes#ASM9} (0x90000) is safe
 * because Quasar's visitors only delegate the visit methods ASM 8 and 9 added.
 *
 * <p>Which classes: every class of the jar outside the relocated ASM package
 * ({@value #RELOCATED_ASM}) whose constant pool names that package, i.e. Quasar's ASM users (in
 * quasar-core 0.8.0: 22 {@code LDC} sites in 15 classes of {@code co.paralleluniverse.fibers.instrument}
 * and {@code co.paralleluniverse.common.reflection.AnnotationUtil}, plus one field constant). Other
 * {@code 0x70000} integers in those classes would be rewritten too; quasar-core 0.8.0 has none.
 *
 * <p>Usage: {@code AsmApiLevelPatch <agent.jar>}. Prints every rewritten class and a summary; fails
 * (non-zero exit, so the Maven build fails) if the jar's relocated ASM is not ASM 9 or if it finds
 * no site to rewrite, e.g. when the jar was already patched or Quasar's layout changed.
 */
public final class AsmApiLevelPatch {
    /** Where the shaded jar relocates {@code org.objectweb.asm}, as an internal-name prefix. */
    static final String RELOCATED_ASM = "co/paralleluniverse/asm/";
    /** {@code Opcodes.ASM7}, the API level quasar-core 0.8.0 was compiled with. */
    static final int ASM7 = 7 << 16;
    /** {@code Opcodes.ASM9}: the level ASM 9 needs to visit sealed classes and records. */
    static final int ASM9 = 9 << 16;

    private AsmApiLevelPatch() {
    }

    /** What one run changed. */
    static final class Result {
        /** One line per rewritten class: its entry name and what changed in it. */
        final List<String> classes = new ArrayList<>();
        int ldcSites;
        int fieldConstants;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: AsmApiLevelPatch <shaded quasar agent jar>");
        }
        Path jar = Path.of(args[0]);
        Result r = patch(jar);
        for (String c : r.classes) System.out.println("[asm-api-level] patched " + c);
        System.out.println("[asm-api-level] " + jar.getFileName() + ": rewrote " + r.ldcSites + " LDC 0x70000 (ASM7) sites and "
            + r.fieldConstants + " field constant(s) to 0x90000 (ASM9) in " + r.classes.size() + " classes");
    }

    /**
     * Rewrites {@code jar} in place (through a temporary file in the same directory).
     *
     * @return the classes and sites rewritten
     * @throws IllegalStateException if the jar's relocated ASM lacks {@code Opcodes.ASM9}, or no
     *                               {@code LDC 0x70000} site was found
     */
    static Result patch(Path jar) throws IOException {
        Result result = new Result();
        Path tmp = Files.createTempFile(jar.toAbsolutePath().getParent(), jar.getFileName().toString(), ".tmp");
        try (ZipFile in = new ZipFile(jar.toFile());
             OutputStream file = Files.newOutputStream(tmp);
             ZipOutputStream out = new ZipOutputStream(file)) {
            requireAsm9(in, jar);
            // Copy entries in their original order: the manifest must stay first for JarInputStream.
            for (Enumeration<? extends ZipEntry> e = in.entries(); e.hasMoreElements(); ) {
                ZipEntry entry = e.nextElement();
                byte[] bytes;
                try (InputStream s = in.getInputStream(entry)) {
                    bytes = s.readAllBytes();
                }
                if (isAsmUser(entry.getName(), bytes)) {
                    byte[] patched = patchClass(entry.getName(), bytes, result);
                    if (patched != null) bytes = patched;
                }
                ZipEntry copy = new ZipEntry(entry.getName());
                copy.setTime(entry.getTime());
                out.putNextEntry(copy);
                out.write(bytes);
                out.closeEntry();
            }
        } catch (IOException | RuntimeException ex) {
            Files.deleteIfExists(tmp);
            throw ex;
        }
        if (result.ldcSites == 0) {
            Files.deleteIfExists(tmp);
            throw new IllegalStateException(jar + ": found no LDC 0x70000 (Opcodes.ASM7) in any class using " + RELOCATED_ASM
                + "; either the jar is already patched (was it re-shaded? the agent module needs maven-jar-plugin forceCreation)"
                + " or quasar-core's layout changed, and Quasar would run at the ASM7 API level and fail on JDK 17 classes");
        }
        try {
            Files.setPosixFilePermissions(tmp, Files.getPosixFilePermissions(jar));
        } catch (UnsupportedOperationException notPosix) {
            // createTempFile's owner-only mode is a POSIX notion; elsewhere there is nothing to copy
        }
        Files.move(tmp, jar, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return result;
    }

    /** Fails unless the relocated {@code Opcodes} declares {@code ASM9}: proof that shading replaced ASM 7. */
    private static void requireAsm9(ZipFile jar, Path path) throws IOException {
        ZipEntry opcodes = jar.getEntry(RELOCATED_ASM + "Opcodes.class");
        if (opcodes == null) {
            throw new IllegalStateException(path + " has no " + RELOCATED_ASM + "Opcodes.class: ASM was not relocated into the agent");
        }
        boolean[] hasAsm9 = {false};
        try (InputStream s = jar.getInputStream(opcodes)) {
            new ClassReader(s.readAllBytes()).accept(new ClassVisitor(Opcodes.ASM9) {
                @Override
                public FieldVisitor visitField(int access, String name, String descriptor, String signature, Object value) {
                    if (name.equals("ASM9")) hasAsm9[0] = true;
                    return null;
                }
            }, ClassReader.SKIP_CODE);
        }
        if (!hasAsm9[0]) {
            throw new IllegalStateException(path + ": the relocated ASM has no Opcodes.ASM9; it is not ASM 9.x (quasar-core's own ASM 7 was not filtered out?)");
        }
    }

    /** A class outside the relocated ASM whose constant pool names it (UTF-8 entries are plain bytes). */
    static boolean isAsmUser(String entryName, byte[] bytes) {
        return entryName.endsWith(".class")
            && !entryName.startsWith(RELOCATED_ASM)
            && !entryName.endsWith("module-info.class")
            && contains(bytes, RELOCATED_ASM.getBytes(StandardCharsets.US_ASCII));
    }

    private static boolean contains(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) continue outer;
            }
            return true;
        }
        return false;
    }

    /** @return the class with every ASM7 constant raised to ASM9, or null if it had none */
    static byte[] patchClass(String entryName, byte[] bytes, Result result) {
        int[] ldc = {0};
        List<String> fields = new ArrayList<>();
        ClassReader reader = new ClassReader(bytes);
        // No COMPUTE_FRAMES/MAXS: replacing one int constant by another changes no stack shape.
        ClassWriter writer = new ClassWriter(reader, 0);
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public FieldVisitor visitField(int access, String name, String descriptor, String signature, Object value) {
                if (Integer.valueOf(ASM7).equals(value) && (access & Opcodes.ACC_STATIC) != 0 && descriptor.equals("I")) {
                    fields.add(name);
                    value = ASM9;
                }
                return super.visitField(access, name, descriptor, signature, value);
            }

            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor, String signature, String[] exceptions) {
                return new MethodVisitor(Opcodes.ASM9, super.visitMethod(access, name, descriptor, signature, exceptions)) {
                    @Override
                    public void visitLdcInsn(Object value) {
                        if (Integer.valueOf(ASM7).equals(value)) {
                            ldc[0]++;
                            value = ASM9;
                        }
                        super.visitLdcInsn(value);
                    }
                };
            }
        }, 0);
        if (ldc[0] == 0 && fields.isEmpty()) return null;
        result.ldcSites += ldc[0];
        result.fieldConstants += fields.size();
        result.classes.add(entryName + ": " + ldc[0] + " LDC" + (fields.isEmpty() ? "" : ", field " + String.join(", ", fields)));
        return writer.toByteArray();
    }
}

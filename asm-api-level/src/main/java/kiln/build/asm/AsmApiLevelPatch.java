package kiln.build.asm;

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
 * Build step that raises the ASM API level an old library passes to ASM from ASM7 to ASM9, in its
 * released jar. kiln runs it on two libraries whose last releases predate JDK 17:
 * <ul>
 *   <li>Quasar 0.8.0 ({@code quasar-agent/}): in place, in the shaded agent jar, whose ASM is
 *       relocated to {@code co/paralleluniverse/asm/} and bundled ({@code --asm-in-jar});</li>
 *   <li>Kilim 2.0.2 ({@code kilim-weaver/}): from the Maven Central jar into the weaver plugin's
 *       {@code target/classes} ({@code --into}), with ASM 9 as an ordinary dependency
 *       ({@code org/objectweb/asm/}).</li>
 * </ul>
 *
 * <p>Why: both were compiled against ASM 7, so every visitor they create says
 * {@code api = Opcodes.ASM7} (0x70000). {@code javac} inlines that constant, so it sits in their
 * class files as an {@code LDC 0x70000} (and as the {@code ConstantValue} of fields such as
 * Quasar's {@code QuasarInstrumentor.ASMAPI} or Kilim's {@code Constants.KILIM_ASM}). An ASM 9
 * reader driving an ASM7-level visitor throws on JDK 17's sealed classes and on records
 * ("PermittedSubclasses requires ASM9", "Record requires ASM8"). Raising the constant to
 * {@link Opcodes#ASM9} (0x90000) is safe for visitors that only delegate the visit methods ASM 8
 * and 9 added, or ignore them; what each library then does with records and sealed classes is
 * its module's business (see kilim-weaver's README).
 *
 * <p>Which classes: every class of the jar outside the ASM package whose constant pool names that
 * package, i.e. the library's ASM users. Other {@code 0x70000} integers in those classes would be
 * rewritten too; neither quasar-core 0.8.0 nor kilim 2.0.2 has one (each site is printed).
 *
 * <p>Usage: {@code AsmApiLevelPatch --asm-package PREFIX [--asm-in-jar] [--exclude PREFIX]... JAR
 * [--into DIR]}. Without {@code --into} the jar is rewritten in place; with it, the jar's entries
 * (less the excluded prefixes) are written under DIR, patched. Prints every rewritten class and a
 * summary; fails (non-zero exit, so the Maven build fails) if it finds no site to rewrite, e.g.
 * when the jar was already patched or the library's layout changed, or, with {@code --asm-in-jar},
 * if the bundled ASM is not ASM 9.
 */
public final class AsmApiLevelPatch {
    /** {@code Opcodes.ASM7}, the API level quasar-core 0.8.0 and kilim 2.0.2 were compiled with. */
    static final int ASM7 = 7 << 16;
    /** {@code Opcodes.ASM9}: the level ASM 9 needs to visit sealed classes and records. */
    static final int ASM9 = 9 << 16;

    private AsmApiLevelPatch() {
    }

    /** What to patch and what to check. */
    static final class Options {
        /** The package of the ASM the library calls, as an internal-name prefix ("org/objectweb/asm/"). */
        final String asmPackage;
        /** The jar bundles that ASM: its {@code Opcodes} must be in the jar and declare ASM9. */
        final boolean asmInJar;
        /** Entry-name prefixes left out of the output. */
        final List<String> excludes;

        Options(String asmPackage, boolean asmInJar, List<String> excludes) {
            if (!asmPackage.endsWith("/")) throw new IllegalArgumentException("--asm-package must end with '/': " + asmPackage);
            this.asmPackage = asmPackage;
            this.asmInJar = asmInJar;
            this.excludes = List.copyOf(excludes);
        }

        boolean excluded(String entryName) {
            for (String prefix : excludes) {
                if (entryName.startsWith(prefix)) return true;
            }
            return false;
        }
    }

    /** What one run changed. */
    static final class Result {
        /** One line per rewritten class: its entry name and what changed in it. */
        final List<String> classes = new ArrayList<>();
        int ldcSites;
        int fieldConstants;
    }

    /** Where the patched entries go. */
    private interface Sink {
        void put(ZipEntry original, byte[] bytes) throws IOException;
    }

    public static void main(String[] args) throws IOException {
        String asmPackage = null;
        boolean asmInJar = false;
        List<String> excludes = new ArrayList<>();
        Path jar = null;
        Path into = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--asm-package": asmPackage = args[++i]; break;
                case "--asm-in-jar": asmInJar = true; break;
                case "--exclude": excludes.add(args[++i]); break;
                case "--into": into = Path.of(args[++i]); break;
                default:
                    if (jar != null || args[i].startsWith("--")) throw new IllegalArgumentException("unexpected argument " + args[i] + "; " + USAGE);
                    jar = Path.of(args[i]);
            }
        }
        if (asmPackage == null || jar == null) throw new IllegalArgumentException(USAGE);
        Options options = new Options(asmPackage, asmInJar, excludes);
        Result r = into == null ? patch(jar, options) : extract(jar, into, options);
        for (String c : r.classes) System.out.println("[asm-api-level] patched " + c);
        System.out.println("[asm-api-level] " + jar.getFileName() + (into == null ? "" : " -> " + into) + ": rewrote " + r.ldcSites
            + " LDC 0x70000 (ASM7) sites and " + r.fieldConstants + " field constant(s) to 0x90000 (ASM9) in " + r.classes.size() + " classes");
    }

    private static final String USAGE = "usage: AsmApiLevelPatch --asm-package PREFIX/ [--asm-in-jar] [--exclude PREFIX]... JAR [--into DIR]";

    /**
     * Rewrites {@code jar} in place (through a temporary file in the same directory), keeping every
     * entry in its order (the manifest must stay first for JarInputStream).
     *
     * @return the classes and sites rewritten
     * @throws IllegalStateException if no {@code LDC 0x70000} site was found (the jar is then left
     *                               alone), or the bundled ASM lacks {@code Opcodes.ASM9}
     */
    static Result patch(Path jar, Options options) throws IOException {
        Path tmp = Files.createTempFile(jar.toAbsolutePath().getParent(), jar.getFileName().toString(), ".tmp");
        Result result;
        try (ZipFile in = new ZipFile(jar.toFile());
             OutputStream file = Files.newOutputStream(tmp);
             ZipOutputStream out = new ZipOutputStream(file)) {
            result = rewrite(in, jar, options, (entry, bytes) -> {
                ZipEntry copy = new ZipEntry(entry.getName());
                copy.setTime(entry.getTime());
                out.putNextEntry(copy);
                out.write(bytes);
                out.closeEntry();
            });
        } catch (IOException | RuntimeException ex) {
            Files.deleteIfExists(tmp);
            throw ex;
        }
        try {
            Files.setPosixFilePermissions(tmp, Files.getPosixFilePermissions(jar));
        } catch (UnsupportedOperationException notPosix) {
            // createTempFile's owner-only mode is a POSIX notion; elsewhere there is nothing to copy
        }
        Files.move(tmp, jar, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return result;
    }

    /**
     * Writes the entries of {@code jar}, patched, under {@code dir} (files there are overwritten;
     * the jar is only read, so every build can extract it again).
     *
     * @return the classes and sites rewritten
     * @throws IllegalStateException if no {@code LDC 0x70000} site was found
     */
    static Result extract(Path jar, Path dir, Options options) throws IOException {
        Path root = dir.toAbsolutePath().normalize();
        try (ZipFile in = new ZipFile(jar.toFile())) {
            // rewrite checks everything before it hands out the first entry: a failed run leaves dir alone.
            return rewrite(in, jar, options, (entry, bytes) -> {
                if (entry.isDirectory()) return;
                Path target = root.resolve(entry.getName()).normalize();
                if (!target.startsWith(root)) throw new IOException(jar + ": entry " + entry.getName() + " leaves " + dir);
                Files.createDirectories(target.getParent());
                Files.write(target, bytes);
            });
        }
    }

    private static Result rewrite(ZipFile in, Path jar, Options options, Sink sink) throws IOException {
        if (options.asmInJar) requireAsm9(in, jar, options.asmPackage);
        Result result = new Result();
        List<ZipEntry> kept = new ArrayList<>();
        List<byte[]> bytesOf = new ArrayList<>();
        for (Enumeration<? extends ZipEntry> e = in.entries(); e.hasMoreElements(); ) {
            ZipEntry entry = e.nextElement();
            if (options.excluded(entry.getName())) continue;
            byte[] bytes;
            try (InputStream s = in.getInputStream(entry)) {
                bytes = s.readAllBytes();
            }
            if (isAsmUser(entry.getName(), bytes, options.asmPackage)) {
                byte[] patched = patchClass(entry.getName(), bytes, result);
                if (patched != null) bytes = patched;
            }
            kept.add(entry);
            bytesOf.add(bytes);
        }
        if (result.ldcSites == 0) {
            throw new IllegalStateException(jar + ": found no LDC 0x70000 (Opcodes.ASM7) in any class using " + options.asmPackage
                + "; either the jar is already patched (was it re-shaded? a shaded module needs maven-jar-plugin forceCreation)"
                + " or the library's layout changed, and it would run at the ASM7 API level and fail on JDK 17 classes");
        }
        for (int i = 0; i < kept.size(); i++) sink.put(kept.get(i), bytesOf.get(i));
        return result;
    }

    /** Fails unless the jar's own {@code Opcodes} declares {@code ASM9}: proof that shading replaced ASM 7. */
    private static void requireAsm9(ZipFile jar, Path path, String asmPackage) throws IOException {
        ZipEntry opcodes = jar.getEntry(asmPackage + "Opcodes.class");
        if (opcodes == null) {
            throw new IllegalStateException(path + " has no " + asmPackage + "Opcodes.class: ASM was not relocated into the jar");
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
            throw new IllegalStateException(path + ": the bundled ASM has no Opcodes.ASM9; it is not ASM 9.x (the library's own ASM 7 was not filtered out?)");
        }
    }

    /** A class outside the ASM package whose constant pool names it (UTF-8 entries are plain bytes). */
    static boolean isAsmUser(String entryName, byte[] bytes, String asmPackage) {
        return entryName.endsWith(".class")
            && !entryName.startsWith(asmPackage)
            && !entryName.endsWith("module-info.class")
            && contains(bytes, asmPackage.getBytes(StandardCharsets.US_ASCII));
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

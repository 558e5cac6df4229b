package kiln.kilim.weaver;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Handle;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.InvokeDynamicInsnNode;
import org.objectweb.asm.tree.LineNumberNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.analysis.Analyzer;
import org.objectweb.asm.tree.analysis.AnalyzerException;
import org.objectweb.asm.tree.analysis.BasicVerifier;

import kilim.analysis.ClassFlow;
import kilim.analysis.ClassInfo;
import kilim.analysis.ClassWeaver;
import kilim.analysis.KilimContext;
import kilim.analysis.KilnMethodCheck;
import kilim.analysis.MethodFlow;
import kilim.mirrors.CachedClassMirrors;

/**
 * Weaves a directory of class files in place with Kilim 2.0.2's weaver (as repaired by this module:
 * ASM API level 9), the way {@code kilim.tools.Weaver} does, with three differences:
 * <ul>
 *   <li>a class that cannot be woven fails with a {@link WeaveException} naming the class and the
 *       method, and what to change, instead of a stack trace;</li>
 *   <li>attributes Kilim's {@code ClassWeaver} does not copy into the class it rewrites are put
 *       back: a record's {@code Record} attribute (its components), a sealed type's
 *       {@code PermittedSubclasses}, and class-level type annotations;</li>
 *   <li>every woven class is verified (ASM's {@link BasicVerifier}) before it is written: where
 *       Kilim emits code the JVM would reject at run time, the build fails instead, naming the
 *       method;</li>
 *   <li>no {@code System.exit}, no static state: it runs inside Maven.</li>
 * </ul>
 */
public final class KilnWeaver {
    /** The field Kilim adds to every class it wove ({@code kilim.Constants.WOVEN_FIELD}). */
    public static final String WOVEN_FIELD = "$isWoven";

    private KilnWeaver() {
    }

    /** What a run did. */
    public static final class Report {
        /** Classes rewritten (binary names). */
        public final List<String> woven = new ArrayList<>();
        /** State classes (kilim.S_*) Kilim generated for them and this run wrote. */
        public final List<String> stateClasses = new ArrayList<>();
        /** Classes whose dropped attributes were put back, with what. */
        public final List<String> restored = new ArrayList<>();
        /** Class files read. */
        public int scanned;
    }

    /**
     * Weaves every class under {@code classes} in place.
     *
     * @param classes   the directory of class files to weave (target/classes or target/test-classes)
     * @param classpath what those classes are compiled against (the module's classpath elements: the
     *                  weaver reads supertypes and callees from it); {@code classes} is added first
     * @throws WeaveException naming every class and method that cannot be woven
     */
    public static Report weave(Path classes, List<Path> classpath) throws IOException, WeaveException {
        Report report = new Report();
        if (!Files.isDirectory(classes)) return report;
        List<Path> files;
        try (Stream<Path> walk = Files.walk(classes)) {
            files = walk.filter(p -> p.toString().endsWith(".class") && !p.getFileName().toString().equals("module-info.class"))
                .sorted().collect(Collectors.toList());
        }
        List<URL> urls = new ArrayList<>();
        urls.add(url(classes));
        for (Path p : classpath) {
            if (!p.toAbsolutePath().normalize().equals(classes.toAbsolutePath().normalize())) urls.add(url(p));
        }
        // The weaver reads every type it analyses from this loader's resources (it never defines a
        // class): the module's classpath, over the JDK's own classes.
        try (URLClassLoader source = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader())) {
            if (source.getResource("kilim/Pausable.class") == null) {
                throw new WeaveException("Kilim weaving " + classes + ": kilim.Pausable is not on the classpath given to the weaver."
                    + " The module must depend on org.db4j:kilim (compile scope).");
            }
            // State classes (kilim.S_*) are cached per thread; a fresh cache makes this run write the
            // ones its classes need, even if an earlier module in this Maven run made them already.
            ClassWeaver.reset();
            KilimContext context = new KilimContext(new CachedClassMirrors(source));
            List<String> failures = new ArrayList<>();
            for (Path file : files) {
                byte[] original = Files.readAllBytes(file);
                report.scanned++;
                ClassWeaver weaver;
                try {
                    weaver = new ClassWeaver(context, new ByteArrayInputStream(original));
                    weaver.weave();
                } catch (RuntimeException | LinkageError | AssertionError e) {
                    failures.add(Diagnosis.explain(context, classes, classes.relativize(file), original, e));
                    continue;
                }
                String name = weaver.classFlow.getClassName();
                String unverifiable = weaver.getClassInfos().stream().filter(ci -> ci.className.equals(name))
                    .map(ci -> Diagnosis.verify(name, ci.bytes)).filter(m -> m != null).findFirst().orElse(null);
                if (unverifiable != null) {
                    failures.add(unverifiable); // the class file stays as javac wrote it
                    continue;
                }
                for (ClassInfo ci : weaver.getClassInfos()) {
                    Path out = classes.resolve(ci.className.replace('.', '/') + ".class");
                    byte[] bytes = ci.bytes;
                    if (ci.className.equals(name)) {
                        List<String> put = new ArrayList<>();
                        bytes = restoreDroppedAttributes(weaver.classFlow, bytes, put);
                        if (!put.isEmpty()) report.restored.add(name + ": " + String.join(", ", put));
                    } else if (Files.exists(out)) {
                        continue; // a state class another class of this run (or an earlier run) wrote
                    }
                    Files.createDirectories(out.getParent());
                    Files.write(out, bytes);
                    (ci.className.equals(name) ? report.woven : report.stateClasses).add(ci.className);
                }
            }
            if (!failures.isEmpty()) {
                throw new WeaveException(String.join("\n", failures));
            }
        }
        return report;
    }

    private static URL url(Path p) {
        try {
            return p.toAbsolutePath().toUri().toURL();
        } catch (MalformedURLException e) {
            throw new IllegalArgumentException(p.toString(), e);
        }
    }

    /**
     * Kilim's {@code ClassWeaver} rebuilds the class it weaves from its parts and leaves out what
     * ASM 7 did not know: the {@code Record} attribute (a record would no longer be one:
     * {@code Class.isRecord()} false, no components for reflection or serialization) and
     * {@code PermittedSubclasses} (a sealed type would silently become open), and it never copied
     * class-level type annotations. This puts them back from the class as it was read.
     *
     * @param put receives a word for each kind of attribute put back
     * @return the woven class with those attributes, or {@code woven} itself if none was lost
     */
    static byte[] restoreDroppedAttributes(ClassNode original, byte[] woven, List<String> put) {
        ClassNode node = new ClassNode(Opcodes.ASM9);
        new ClassReader(woven).accept(node, 0);
        if (isEmpty(node.recordComponents) && !isEmpty(original.recordComponents)) {
            node.recordComponents = original.recordComponents;
            put.add("record components");
        }
        if (isEmpty(node.permittedSubclasses) && !isEmpty(original.permittedSubclasses)) {
            node.permittedSubclasses = original.permittedSubclasses;
            put.add("permitted subclasses");
        }
        if (isEmpty(node.visibleTypeAnnotations) && !isEmpty(original.visibleTypeAnnotations)) {
            node.visibleTypeAnnotations = original.visibleTypeAnnotations;
            put.add("type annotations");
        }
        if (isEmpty(node.invisibleTypeAnnotations) && !isEmpty(original.invisibleTypeAnnotations)) {
            node.invisibleTypeAnnotations = original.invisibleTypeAnnotations;
            if (!put.contains("type annotations")) put.add("type annotations");
        }
        if (put.isEmpty()) return woven;
        // Frames and maxima as Kilim computed them: only class attributes change.
        ClassWriter writer = new ClassWriter(0);
        node.accept(writer);
        return writer.toByteArray();
    }

    private static boolean isEmpty(List<?> list) {
        return list == null || list.isEmpty();
    }

    /** Turns a weaver failure into one message naming the class, the method and what to change. */
    static final class Diagnosis {
        private Diagnosis() {
        }

        /**
         * @param classes the directory being woven: an interface compiled there is the user's own,
         *                which can declare {@code throws Pausable}
         */
        static String explain(KilimContext context, Path classes, Path file, byte[] bytes, Throwable failure) {
            String className = file.toString().replace('\\', '/').replaceAll("\\.class$", "").replace('/', '.');
            // Analyse the methods one by one, as ClassFlow.analyze does, to find the one(s) at fault.
            List<String> methods = new ArrayList<>();
            try {
                Map<String, Integer> firstLines = firstLines(bytes);
                ClassFlow flow = KilnMethodCheck.check(context, bytes,
                    (c, m, e) -> methods.add(line(c, where(c, m.name, m.desc, firstLines.getOrDefault(m.name + m.desc, -1)), e,
                        foreignInterface(LambdaSite.of(bytes, m.name, m.desc), classes))));
                className = flow.getClassName();
                if (methods.isEmpty()) {
                    // Analysis passes method by method: the failure is in rewriting. Name the
                    // methods being rewritten (the pausable ones).
                    List<String> pausable = new ArrayList<>();
                    for (Object o : flow.methods) {
                        MethodFlow m = (MethodFlow) o;
                        if (m.isPausable() && !m.isAbstract()) pausable.add(javaName(className, m.name, m.desc));
                    }
                    methods.add(line(className, pausable.isEmpty() ? null : String.join(", ", pausable), failure, null));
                }
            } catch (IOException | RuntimeException | LinkageError | AssertionError e) {
                methods.add(line(className, null, failure, null));
            }
            return String.join("\n", methods);
        }

        /**
         * Kilim 2.0.2 can emit code the JVM rejects ({@code VerifyError: Bad local variable type}):
         * at a pause inside a catch block it saves and restores a local that is not assigned on
         * every path there. The JVM would say so only when the class loads; this checks every
         * method of the woven class with ASM's {@link BasicVerifier} (types as the JVM's verifier
         * sees them, without loading classes) and says it at build time.
         *
         * @return the failure, naming the user's method, or null when the class verifies
         */
        static String verify(String className, byte[] woven) {
            ClassNode node = new ClassNode(Opcodes.ASM9);
            new ClassReader(woven).accept(node, 0);
            for (MethodNode m : node.methods) {
                if (m.instructions.size() == 0) continue;
                try {
                    new Analyzer<>(new BasicVerifier()).analyze(node.name, m);
                } catch (AnalyzerException e) {
                    // The woven copy of a pausable method carries an extra, last Fiber parameter.
                    String desc = m.desc.replace(FIBER_LAST, ")");
                    return "Kilim cannot weave " + javaName(className, m.name, desc) + " (class " + className + "): the woven bytecode"
                        + " does not verify (" + lineOf(e.node) + e.getMessage() + "); the JVM would refuse the class with VerifyError: Bad local variable type."
                        + " Kilim 2.0.2 saves a local at the pause that is not assigned on every path to it"
                        + "\n    what to change: do not pause inside the catch block (set a flag there and pause after the try/catch),"
                        + " or move the try block into a method of its own, so no local it declares is live at the pause";
                }
            }
            return null;
        }

        private static final String FIBER_LAST = "Lkilim/Fiber;)";

        /** "source line N, " for the line an instruction belongs to, if the class has line numbers. */
        private static String lineOf(AbstractInsnNode insn) {
            for (AbstractInsnNode n = insn; n != null; n = n.getPrevious()) {
                if (n instanceof LineNumberNode) return "source line " + ((LineNumberNode) n).line + ", ";
            }
            return "";
        }

        /**
         * @return the method as its author knows it, with the source line where it starts:
         *         {@code demo.Routes.slow(Request) at Routes.java:41}, and for a lambda (a handler
         *         written {@code req -> ...}), which javac compiles to a synthetic
         *         {@code lambda$routes$0}, {@code a lambda in demo.Routes.routes at Routes.java:52}
         */
        static String where(String className, String name, String desc, int line) {
            String outer = className.substring(className.lastIndexOf('.') + 1).replaceAll("\\$.*", "");
            String at = line < 0 ? "" : " at " + outer + ".java:" + line;
            String[] lambda = name.split("\\$");
            if (lambda.length == 3 && lambda[0].equals("lambda")) {
                return "a lambda in " + className + "." + lambda[1] + at + " (" + name + ")";
            }
            return javaName(className, name, desc) + at;
        }

        /** @return each method's first source line (name + descriptor to line), from the class as javac wrote it */
        private static Map<String, Integer> firstLines(byte[] bytes) {
            ClassNode node = new ClassNode(Opcodes.ASM9);
            new ClassReader(bytes).accept(node, ClassReader.SKIP_FRAMES);
            Map<String, Integer> lines = new HashMap<>();
            for (MethodNode m : node.methods) {
                for (AbstractInsnNode n = m.instructions.getFirst(); n != null; n = n.getNext()) {
                    if (n instanceof LineNumberNode) {
                        lines.put(m.name + m.desc, ((LineNumberNode) n).line);
                        break;
                    }
                }
            }
            return lines;
        }

        /**
         * @param method the method(s) at fault, or null when the failure is the whole class's
         * @param lambda where the method at fault is a lambda for an interface the user cannot
         *               change (a JDK or library one), or null
         */
        private static String line(String className, String method, Throwable e, LambdaSite lambda) {
            String what = method == null ? "class " + className : method + " (class " + className + ")";
            return "Kilim cannot weave " + what + ": " + cause(e) + "\n    what to change: " + advice(e, lambda);
        }

        /** @return {@code site} when its interface is neither kiln's nor compiled in {@code classes} (so not the user's), else null */
        static LambdaSite foreignInterface(LambdaSite site, Path classes) {
            if (site == null || site.iface.startsWith("kiln.")) return null;
            if (classes != null && Files.exists(classes.resolve(site.iface.replace('.', '/') + ".class"))) return null;
            return site;
        }

        /**
         * Where javac made a lambda: the functional interface it implements (the
         * {@code invokedynamic} that creates it returns that type, its name is the interface's
         * method) and the method it is passed to, when the next call takes that interface
         * ({@code list.forEach(x -> ...)}: {@code java.util.List.forEach}).
         */
        static final class LambdaSite {
            final String iface;
            final String method;
            /** e.g. {@code java.util.List.forEach}; null when not found */
            final String passedTo;

            LambdaSite(String iface, String method, String passedTo) {
                this.iface = iface;
                this.method = method;
                this.passedTo = passedTo;
            }

            /** @return the site of the lambda whose body javac compiled to {@code name desc}, or null when it is not one */
            static LambdaSite of(byte[] classBytes, String name, String desc) {
                if (!name.startsWith("lambda$")) return null;
                ClassNode node = new ClassNode(Opcodes.ASM9);
                new ClassReader(classBytes).accept(node, ClassReader.SKIP_FRAMES);
                for (MethodNode m : node.methods) {
                    for (AbstractInsnNode n = m.instructions.getFirst(); n != null; n = n.getNext()) {
                        if (!(n instanceof InvokeDynamicInsnNode)) continue;
                        InvokeDynamicInsnNode indy = (InvokeDynamicInsnNode) n;
                        if (!implementedBy(indy, node.name, name, desc)) continue;
                        Type iface = Type.getReturnType(indy.desc);
                        return new LambdaSite(iface.getClassName(), indy.name, passedTo(n, iface));
                    }
                }
                return null;
            }

            private static boolean implementedBy(InvokeDynamicInsnNode indy, String owner, String name, String desc) {
                if (!indy.bsm.getOwner().equals("java/lang/invoke/LambdaMetafactory")) return false;
                for (Object arg : indy.bsmArgs) {
                    if (arg instanceof Handle) {
                        Handle h = (Handle) arg;
                        if (h.getOwner().equals(owner) && h.getName().equals(name) && h.getDesc().equals(desc)) return true;
                    }
                }
                return false;
            }

            private static String passedTo(AbstractInsnNode indy, Type iface) {
                for (AbstractInsnNode n = indy.getNext(); n != null; n = n.getNext()) {
                    if (!(n instanceof MethodInsnNode)) continue;
                    MethodInsnNode call = (MethodInsnNode) n;
                    for (Type arg : Type.getArgumentTypes(call.desc)) {
                        if (arg.equals(iface)) return call.owner.replace('/', '.') + "." + call.name;
                    }
                }
                return null;
            }
        }

        static String javaName(String className, String method, String desc) {
            StringBuilder s = new StringBuilder(className).append('.').append(method).append('(');
            Type[] args = Type.getArgumentTypes(desc);
            for (int i = 0; i < args.length; i++) {
                if (i > 0) s.append(", ");
                String n = args[i].getClassName();
                s.append(n.substring(n.lastIndexOf('.') + 1));
            }
            return s.append(')').toString();
        }

        /** The failure in one line: Kilim's own message without its layout, or the exception. */
        static String cause(Throwable e) {
            String message = e.getMessage() == null ? "" : e.getMessage().trim().replaceAll("\\s*\\n\\s*", "; ");
            boolean kilims = e.getClass().getName().equals("kilim.KilimException");
            return kilims ? message : e.getClass().getSimpleName() + (message.isEmpty() ? "" : ": " + message);
        }

        static String advice(Throwable e, LambdaSite lambda) {
            String m = String.valueOf(e.getMessage());
            if (m.contains("should be marked pausable") && lambda != null) {
                String passed = lambda.passedTo == null ? "" : " (passed to " + lambda.passedTo + ")";
                boolean forEach = lambda.passedTo != null && lambda.passedTo.endsWith(".forEach");
                return "the lambda implements " + lambda.iface + passed + ", whose " + lambda.method + " cannot be declared"
                    + " 'throws Pausable', so the lambda cannot pause. "
                    + (forEach ? "Use a plain for loop instead of forEach: for (var item : items) { ... }, "
                               : "Make the pausable call in the enclosing method itself, not in a lambda the JDK or a library"
                                 + " calls (a plain for loop instead of forEach or a stream), ")
                    + "so that the pause is in the enclosing method's own body (which declares 'throws Pausable')";
            }
            if (m.contains("synchronized block")) {
                return "move the pausable call out of the synchronized block (a fiber must not hold a monitor across a pause;"
                    + " guard shared state with a kilim.Mailbox, or lock only around code that does not pause)";
            }
            if (m.contains("Constructor")) {
                return "a constructor cannot pause: do the pausable work in a static factory method or after construction";
            }
            if (m.contains("should be marked pausable")) {
                return "add 'throws Pausable' to the method (it calls pausable methods), or move those calls out of it";
            }
            if (m.contains("Base class method is")) {
                return "declare 'throws Pausable' the same way on the overriding method and the method it overrides";
            }
            if (m.contains("Unsupported class file major version")) {
                return "the weaver's ASM cannot read this class file version: compile for Java 17 (the root pom sets"
                    + " maven.compiler.release), or raise asm.version to an ASM that knows it";
            }
            if (m.contains("requires ASM")) {
                return "the weaver is not the repaired one (kiln's kilim-weaver raises Kilim's ASM API level to 9): use dev.kiln:kiln-kilim-weaver";
            }
            if (e instanceof ClassCircularityError || e instanceof NoClassDefFoundError || m.contains("not found") || m.contains("NotFound")) {
                return "the weaver could not read a type this method uses: make sure the module depends on it (compile scope for main code)";
            }
            return "split the method: move the code before and after the pausable call into smaller methods, so fewer"
                + " locals of different types meet across a try/catch or loop, and see kilim-weaver/README.md";
        }
    }
}

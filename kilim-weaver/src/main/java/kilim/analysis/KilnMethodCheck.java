package kilim.analysis;

import java.io.ByteArrayInputStream;
import java.io.IOException;

import org.objectweb.asm.ClassReader;

/**
 * Part of kiln's kilim-weaver, not of Kilim: it sits in {@code kilim.analysis} for package access.
 * Analyses a class's methods one at a time, as {@link ClassFlow#analyze} does, so that a failure
 * can be pinned on the method that caused it ({@code ClassFlow.analyze} collects Kilim's own
 * errors per method but lets any other exception escape without saying which method it was).
 */
public final class KilnMethodCheck {
    private KilnMethodCheck() {
    }

    /** Receives each method that fails, with its class's binary name and the error. */
    public interface Failures {
        void at(String className, MethodFlow method, Throwable error);
    }

    /** @return the class as read (its methods analysed as far as they go) */
    public static ClassFlow check(KilimContext context, byte[] bytes, Failures failures) throws IOException {
        ClassFlow flow = new ClassFlow(context, new ByteArrayInputStream(bytes));
        flow.cr.accept(flow, ClassReader.SKIP_FRAMES);
        flow.classDesc = TypeDesc.getInterned("L" + flow.name + ';');
        for (Object o : flow.methods) {
            MethodFlow m = (MethodFlow) o;
            if (m.isBridge()) continue;
            try {
                m.verifyPausables();
                if (m.needsWeaving() && !m.isAbstract()) m.analyze();
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failures.at(flow.getClassName(), m, e);
            }
        }
        return flow;
    }
}

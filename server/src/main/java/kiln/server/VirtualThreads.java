package kiln.server;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ThreadFactory;

/**
 * JDK 21's virtual threads for code compiled for JDK 17 (kiln builds with {@code --release 17}):
 * {@code Thread.ofVirtual()} and {@code Thread.isVirtual()} are looked up at run time, once, as
 * Jetty's own {@code VirtualThreads} helper does. On JDK 17-20 they do not exist, and the front ends
 * that need them stop at start-up with one line naming the JDK to use ({@link #requireOrExit}).
 */
public final class VirtualThreads {
    /** The first Java feature version with virtual threads as a final feature (JEP 444). */
    public static final int MIN_JDK = 21;

    private static final MethodHandle OF_VIRTUAL;
    private static final MethodHandle NAME;
    private static final MethodHandle FACTORY;
    private static final MethodHandle IS_VIRTUAL;

    static {
        MethodHandle ofVirtual = null;
        MethodHandle name = null;
        MethodHandle factory = null;
        MethodHandle isVirtual = null;
        if (Runtime.version().feature() >= MIN_JDK) {
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                Class<?> builder = Class.forName("java.lang.Thread$Builder");
                Class<?> ofVirtualType = Class.forName("java.lang.Thread$Builder$OfVirtual");
                ofVirtual = lookup.findStatic(Thread.class, "ofVirtual", MethodType.methodType(ofVirtualType));
                name = lookup.findVirtual(builder, "name", MethodType.methodType(builder, String.class, long.class));
                factory = lookup.findVirtual(builder, "factory", MethodType.methodType(ThreadFactory.class));
                isVirtual = lookup.findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
        OF_VIRTUAL = ofVirtual;
        NAME = name;
        FACTORY = factory;
        IS_VIRTUAL = isVirtual;
    }

    private VirtualThreads() {
    }

    /** @return true when this JVM has virtual threads (JDK 21 or newer) */
    public static boolean supported() {
        return OF_VIRTUAL != null;
    }

    /**
     * @return the line a front end that needs virtual threads prints when started on an older JDK,
     *         naming this JVM and the JDK to use; null when this JVM has virtual threads
     */
    public static String unsupportedMessage(String program) {
        if (supported()) return null;
        return "virtual threads need JDK " + MIN_JDK + " or newer; this is JDK " + Runtime.version().feature()
            + " (" + System.getProperty("java.home") + "): run " + program + " with a JDK " + MIN_JDK
            + "+ java, e.g. $(scripts/find-java.sh " + MIN_JDK + "+) -jar ..., or install one (Temurin " + MIN_JDK
            + "+, or openjdk-" + MIN_JDK + "-jdk-headless on Debian 13 / Ubuntu 24.04)";
    }

    /** Exits 1 with {@link #unsupportedMessage}'s one line when this JVM has no virtual threads. */
    public static void requireOrExit(String program) {
        String message = unsupportedMessage(program);
        if (message == null) return;
        System.err.println(program + ": error: " + message);
        System.exit(1);
    }

    /**
     * @param prefix the threads' names without their number, e.g. {@code "kiln-conn-"}
     * @return a factory of virtual threads named {@code prefix0, prefix1...}
     * @throws UnsupportedOperationException before JDK 21
     */
    public static ThreadFactory factory(String prefix) {
        if (!supported()) throw new UnsupportedOperationException(unsupportedMessage("this server"));
        try {
            Object builder = OF_VIRTUAL.invoke();
            builder = NAME.invoke(builder, prefix, 0L);
            return (ThreadFactory) FACTORY.invoke(builder);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("Thread.ofVirtual() failed", t);
        }
    }

    /** @return true when {@code t} is a virtual thread; false on JDKs without them */
    public static boolean isVirtual(Thread t) {
        if (IS_VIRTUAL == null) return false;
        try {
            return (boolean) IS_VIRTUAL.invoke(t);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("Thread.isVirtual() failed", e);
        }
    }
}

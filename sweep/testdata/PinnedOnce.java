/**
 * For sweep/tests/test_pinning.py: pins its carrier once on purpose (a virtual thread sleeps 100 ms
 * inside a class initialiser, which pins on every JDK, JEP 491 included), prints "pinned", then waits
 * for stdin to close. JDK 21+: java sweep/testdata/PinnedOnce.java
 */
public class PinnedOnce {
    public static void main(String[] args) throws Exception {
        Thread.ofVirtual().start(SlowInit::touch).join();
        System.out.println("pinned");
        System.out.flush();
        System.in.read();
    }
}

class SlowInit {
    static {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void touch() {
    }
}

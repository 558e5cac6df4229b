package kiln.kilim.weaver;

/** Classes that Kilim cannot weave; the message names each class and method, and what to change. */
public final class WeaveException extends Exception {
    private static final long serialVersionUID = 1L;

    public WeaveException(String message) {
        super(message);
    }
}

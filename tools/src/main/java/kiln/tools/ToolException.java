package kiln.tools;

/** What the tool tells its user in one line before it exits with status 1: a refusal, a missing space, a damaged dump. */
final class ToolException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ToolException(String message) {
        super(message);
    }

    ToolException(String message, Throwable cause) {
        super(message, cause);
    }
}

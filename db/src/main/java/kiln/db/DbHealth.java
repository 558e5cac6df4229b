package kiln.db;

/**
 * The answer of {@link Db#health}: healthy, or the first problem found. A health endpoint answers
 * 200 for the first and 503 with {@link #problem()} for the second.
 */
public final class DbHealth {
    private static final DbHealth OK = new DbHealth(null);

    private final String problem;

    private DbHealth(String problem) {
        this.problem = problem;
    }

    static DbHealth ok() {
        return OK;
    }

    static DbHealth problem(String problem) {
        return new DbHealth(problem);
    }

    /** @return true when the database answered a read and its writer thread is running and not stuck */
    public boolean isOk() {
        return problem == null;
    }

    /** @return what is wrong, one line ("the writer thread is not running"...), or null when {@link #isOk()} */
    public String problem() {
        return problem;
    }

    @Override
    public String toString() {
        return problem == null ? "ok" : problem;
    }
}

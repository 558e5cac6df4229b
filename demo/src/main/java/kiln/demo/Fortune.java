package kiln.demo;

/** A row of the TechEmpower {@code Fortune} table. Ordered by message, as the fortunes test sorts. */
public final class Fortune implements Comparable<Fortune> {
    public final int id;
    public final String message;

    public Fortune(int id, String message) {
        this.id = id;
        this.message = message;
    }

    @Override
    public int compareTo(Fortune o) {
        return message.compareTo(o.message);
    }

    @Override
    public String toString() {
        return "Fortune{id=" + id + ", message=" + message + '}';
    }
}

package kiln.db;

/** One named space of keys in a {@link KvEngine}, as its engine opened it; a table's storage. */
public interface KvSpace {
    /** @return the space's name */
    String name();
}

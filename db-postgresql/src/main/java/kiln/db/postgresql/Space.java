package kiln.db.postgresql;

import kiln.db.KvSpace;

/** A space: its name, its table's schema-qualified quoted name and its statements. */
final class Space implements KvSpace {
    final String name;
    final String table;
    final String get;
    final String upsert;
    final String delete;
    final String count;

    /** @param table the table's schema-qualified quoted name ({@link PostgresEngine#table}) */
    Space(String name, String table) {
        this.name = name;
        this.table = table;
        this.get = "SELECT v FROM " + table + " WHERE k = ?";
        this.upsert = "INSERT INTO " + table + " (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v";
        this.delete = "DELETE FROM " + table + " WHERE k = ?";
        this.count = "SELECT count(*) FROM " + table;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        return "Space(" + name + " in " + table + ")";
    }
}

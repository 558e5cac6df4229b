package kiln.db.postgresql;

import kiln.db.KvSpace;

/** A space: its name, its table's quoted name and its statements. */
final class Space implements KvSpace {
    final String name;
    final String table;
    final String get;
    final String upsert;
    final String delete;
    final String count;

    Space(String name, String relname) {
        this.name = name;
        this.table = PostgresEngine.quote(relname);
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

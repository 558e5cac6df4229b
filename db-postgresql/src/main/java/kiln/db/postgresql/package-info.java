/**
 * The PostgreSQL engine (module kiln-db-postgresql): {@code Db.open("postgresql://kiln@HOST:5432/kiln")},
 * so that many servers share one database, the tables and feeds of kiln's API unchanged.
 * {@link kiln.db.postgresql.PostgresEngine} says how the API maps onto PostgreSQL; docs/scaling.md
 * runs a cluster of it.
 */
package kiln.db.postgresql;

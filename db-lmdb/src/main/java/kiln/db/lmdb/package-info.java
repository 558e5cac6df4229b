/**
 * The LMDB engine (module kiln-db-lmdb): {@code Db.open(Path.of("data"))}, {@code lmdb:DIR}, or
 * {@link kiln.db.lmdb.LmdbEngine#builder} for settings of its own (map size, reader slots). One
 * box's database: snapshot reads inline on the caller's thread, one writer with group commit,
 * fsync per commit. docs/durability.md says what survives kill -9 and a power cut.
 */
package kiln.db.lmdb;

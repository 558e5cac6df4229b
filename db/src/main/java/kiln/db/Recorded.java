package kiln.db;

/**
 * One put or delete on a table with a {@link ChangeFeed}, as the write query made it: the bytes the
 * table got, encoded at the call, and the change decoded from those bytes. The feed's log stores the
 * bytes and its readers get the decoded change, so both say what the table holds.
 *
 * @param key    the key's bytes
 * @param value  the value's bytes, or null for a delete
 * @param change the change as the feed delivers it
 */
record Recorded<K, V>(byte[] key, byte[] value, ChangeSet.Change<K, V> change) {
}

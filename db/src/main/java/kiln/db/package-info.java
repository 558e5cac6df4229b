/**
 * kiln's database: an embedded database whose query language is Java, a query being a lambda over
 * a transaction, in layers over one ordered key-value engine found by URL. Start at {@link kiln.db.Db}.
 *
 * <pre>{@code
 * Db db = Db.open(Path.of("data"));                                   // LMDB in ./data
 * Table<Tuple, Message> messages = db.table("messages", Codec.TUPLE, Codec.json(Message.class));
 * await(db.write(txn -> { messages.put(txn, Tuple.of(room, id), m); return null; }));   // durable when it resumes
 * Page<Tuple, Message> page = await(db.read(txn -> messages.range(txn, Range.prefix(Tuple.of(room)).limit(20))));
 * }</pre>
 *
 * <ul>
 *   <li>tables and queries: {@link kiln.db.Db}, {@link kiln.db.Table}, {@link kiln.db.Txn},
 *       {@link kiln.db.Query}, {@link kiln.db.QueryFuture}, {@link kiln.db.Codec},
 *       {@link kiln.db.Sequence};</li>
 *   <li>keys, ranges and pages: {@link kiln.db.Tuple}, {@link kiln.db.Range}, {@link kiln.db.Page};</li>
 *   <li>indexes, rows that expire, retries: {@link kiln.db.Index}, {@link kiln.db.Db#expiringTable},
 *       {@link kiln.db.IdempotencyKeys};</li>
 *   <li>live data: {@link kiln.db.ChangeFeed}, {@link kiln.db.PrefixFeed}, {@link kiln.db.ChangeSet};</li>
 *   <li>errors: {@link kiln.db.DbException} and its kinds;</li>
 *   <li>for an engine's author: {@link kiln.db.KvEngine}, {@link kiln.db.KvEngineProvider},
 *       {@link kiln.db.KvWriteBuffer}.</li>
 * </ul>
 *
 * <p>The guides: docs/data.md (data models, with the message board), docs/live-data.md (feeds),
 * docs/durability.md (what a commit promises).
 */
package kiln.db;

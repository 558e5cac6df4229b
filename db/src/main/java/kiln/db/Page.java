package kiln.db;

import java.util.List;

/**
 * One page of a {@link Table#range}: its rows in the range's order, and the token that gives the next
 * page. The token is opaque and URL-safe (base64url): hand it to the client, take it back
 * ({@code ?after=TOKEN}) and pass it to {@link Range#after}. No read transaction spans two pages;
 * the next page starts strictly after this page's last key, as the table is then. The token carries
 * that key's bytes signed, not encrypted: a client that decodes it can read the key (mind this when
 * keys hold what a client should not see, such as another user's e-mail address in an index).
 *
 * <pre>{@code
 * Page<Tuple, Message> page = await(db.read(txn -> messages.range(txn, Range.prefix(Tuple.of(room)).limit(20)
 *     .after(req.param("after")))));
 * List<Message> shown = new ArrayList<>();
 * for (Page.Row<Tuple, Message> r : page.rows()) shown.add(r.value());      // r.key(): Tuple.of(room, id)
 * return Response.json(new Listing(shown, page.continuation()));   // record Listing(List<Message> messages, String next)
 * // next is null on the last page: {"messages":[...],"next":null}
 * }</pre>
 *
 * <p>A page of an {@link Index} has the table's rows: their keys and values, in index order.
 *
 * @param rows         up to the range's limit, unmodifiable
 * @param continuation the next page's token, or null when this page ends the range
 * @param <K>          the key type
 * @param <V>          the value type
 */
public record Page<K, V>(List<Row<K, V>> rows, String continuation) {
    /**
     * One row of a page.
     *
     * @param key   the row's key in its table (for a page of an index: the table's key, not the index key)
     * @param value the row's value, decoded
     * @param <K>   the key type
     * @param <V>   the value type
     */
    public record Row<K, V>(K key, V value) {
    }

    /** @return true when there is a next page */
    public boolean hasMore() {
        return continuation != null;
    }
}

package kiln.demo;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.http.Json;
import kiln.http.ServerSentEvents;
import kiln.server.FeedEvents;

/**
 * The demo's live endpoints: the World table's committed changes as server-sent events, one event
 * per committed write ({@code /updates} request), its id the write's commit sequence number:
 * <pre>
 * id: 1234
 * event: update
 * data: {"seq":1234,"committedAt":1764050000123456,"worlds":[{"id":17,"randomNumber":4242}]}
 * </pre>
 * {@code committedAt} is when the commit became durable, microseconds since the epoch (what the
 * fan-out benchmark measures delivery latency from). A subscriber that fell further behind than
 * the feed's window (or sent a {@code Last-Event-ID} from before a restore) gets
 * {@code event: reload} with the newest id and a reason, and goes on from there: the page reloads
 * its table.
 */
final class LiveWorlds {
    /** Change sets kept in the database's log: how far a subscriber may lag, or be away, and resume. */
    static final int WINDOW = 10_000;

    private final ChangeFeed<Integer, Integer> feed;
    /** The newest events of {@code /updates/events}, encoded once for every subscriber, by seq modulo the length. */
    private final AtomicReferenceArray<Encoded> recent = new AtomicReferenceArray<>(128);

    private record Encoded(long seq, byte[] bytes) {
    }

    LiveWorlds(ChangeFeed<Integer, Integer> feed) {
        this.feed = feed;
    }

    /**
     * @param lastEventId the subscriber's {@code Last-Event-ID}, where it resumes; null for none (it starts at the newest set)
     * @param id          the one World row to follow, or null for every committed write
     * @return the subscriber's event stream: its position in the feed, and nothing else
     */
    FeedEvents subscriber(String lastEventId, Integer id) {
        FeedEvents.Builder b = FeedEvents.builder();
        if (id == null) {
            b.add(feed, (events, eventId, set) -> events.encoded(encoded(set)));  // every write: encoded once for all
        } else {
            // one row: its prefix feed, so that only commits that change the row wake it
            b.add(feed.prefix(id), (events, eventId, set) -> events.event(eventId, "update", data(set, id)));
        }
        return b.resumeFrom(lastEventId).build();
    }

    /** @return the {@code /updates/events} event of {@code set}, encoded by the first subscriber that needs it */
    private byte[] encoded(ChangeSet<Integer, Integer> set) {
        int slot = (int) (set.seq() % recent.length());
        Encoded e = recent.get(slot);
        if (e == null || e.seq != set.seq()) {
            e = new Encoded(set.seq(), ServerSentEvents.encode(Long.toString(set.seq()), "update", data(set, null)));
            recent.set(slot, e);
        }
        return e.bytes;
    }


    /** @return the event's data: the set's number, its commit time and its rows (only row {@code id}'s when not null) */
    private static String data(ChangeSet<Integer, Integer> set, Integer id) {
        List<World> rows = new ArrayList<>(set.changes().size());
        for (ChangeSet.Change<Integer, Integer> c : set.changes()) {
            if (!c.deleted() && (id == null || c.key().equals(id))) rows.add(new World(c.key(), c.value()));
        }
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("seq", set.seq());
        data.put("committedAt", set.committedAt());
        data.put("worlds", rows);
        return Json.writeString(data);
    }
}

package kiln.demo;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReferenceArray;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.DbException;
import kiln.db.PrefixFeed;
import kiln.db.QueryFuture;
import kiln.http.Json;
import kiln.http.ServerSentEvents;

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
    /** The most events one step of a stream sends before it lets others run. */
    private static final int EVENTS_PER_STEP = 64;

    private final ChangeFeed<Integer, Integer> feed;
    /** The newest events of {@code /updates/events}, encoded once for every subscriber, by seq modulo the length. */
    private final AtomicReferenceArray<Encoded> recent = new AtomicReferenceArray<>(128);

    private record Encoded(long seq, byte[] bytes) {
    }

    LiveWorlds(ChangeFeed<Integer, Integer> feed) {
        this.feed = feed;
    }

    /** @return the newest commit sequence number: where a new subscriber starts */
    long lastSeq() {
        return feed.lastSeq();
    }

    /**
     * @param after the last id the subscriber has seen (its {@code Last-Event-ID}), or {@link #lastSeq()}
     * @param id    the one World row to follow, or null for every committed write
     * @return the subscriber's event stream: its position in the feed, and nothing else
     */
    ServerSentEvents.Stream subscriber(long after, Integer id) {
        return id == null ? new Subscriber(this, after) : new RowSubscriber(feed.prefix(id), after, id);
    }

    /** One subscriber of every write: one small object while it waits (a few thousand of them on a small box). */
    private static final class Subscriber extends ServerSentEvents.Stream {
        private final LiveWorlds live;
        private long seen;
        /** A read of the feed's log the stream waits for (over PostgreSQL, on a read thread), or null. */
        private QueryFuture<List<ChangeSet<Integer, Integer>>> reading;

        Subscriber(LiveWorlds live, long seen) {
            this.live = live;
            this.seen = seen;
        }

        @Override
        protected CompletableFuture<?> next(ServerSentEvents.Events events) {
            ChangeFeed<Integer, Integer> feed = live.feed;
            if (reading == null) reading = feed.readAsync(seen, EVENTS_PER_STEP);  // done at once unless the log must be read
            if (!reading.isDone()) return reading;
            QueryFuture<List<ChangeSet<Integer, Integer>>> read = reading;
            reading = null;
            List<ChangeSet<Integer, Integer>> sets;
            try {
                sets = read.join();  // done: returns at once
            } catch (CompletionException e) {
                if (!(e.getCause() instanceof DbException.Expired expired)) throw e;
                seen = feed.lastSeq();
                events.event(Long.toString(seen), "reload", json(Map.of("reason", expired.getMessage())));
                return feed.after(seen);
            }
            for (ChangeSet<Integer, Integer> set : sets) {
                events.encoded(live.encoded(set));
                seen = set.seq();
            }
            return feed.after(seen);  // already complete when more sets are waiting
        }
    }

    /**
     * One subscriber of one row ({@code /worlds/{id}/events}): it waits on the row's {@link PrefixFeed},
     * so only commits that change the row wake it, and reads only the row's changes.
     */
    private static final class RowSubscriber extends ServerSentEvents.Stream {
        private final PrefixFeed<Integer, Integer> row;
        private final int id;
        private long seen;
        /** A read of the feed's log the stream waits for, or null. */
        private QueryFuture<PrefixFeed.Changes<Integer, Integer>> reading;

        RowSubscriber(PrefixFeed<Integer, Integer> row, long seen, int id) {
            this.row = row;
            this.seen = seen;
            this.id = id;
        }

        @Override
        protected CompletableFuture<?> next(ServerSentEvents.Events events) {
            if (reading == null) reading = row.readAsync(seen, EVENTS_PER_STEP);
            if (!reading.isDone()) return reading;
            QueryFuture<PrefixFeed.Changes<Integer, Integer>> read = reading;
            reading = null;
            PrefixFeed.Changes<Integer, Integer> changes;
            try {
                changes = read.join();
            } catch (CompletionException e) {
                if (!(e.getCause() instanceof DbException.Expired expired)) throw e;
                seen = row.lastSeq();
                events.event(Long.toString(seen), "reload", json(Map.of("reason", expired.getMessage())));
                return row.after(seen);
            }
            for (ChangeSet<Integer, Integer> set : changes.sets()) events.event(Long.toString(set.seq()), "update", data(set, id));
            seen = changes.through();
            return row.after(seen);  // already complete when more sets are waiting
        }
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

    private static String json(Object value) {
        return new String(Json.write(value), StandardCharsets.UTF_8);
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
        return json(data);
    }
}

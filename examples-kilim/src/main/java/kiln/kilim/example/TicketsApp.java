package kiln.kilim.example;

import static kiln.kilim.Fibers.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Index;
import kiln.db.Page;
import kiln.db.Range;
import kiln.db.Sequence;
import kiln.db.Table;
import kiln.db.Tuple;
import kiln.http.HttpException;
import kiln.http.Json;
import kiln.http.Response;
import kiln.http.ServerSentEvents;
import kiln.kilim.KilimMain;
import kiln.kilim.Router;
import kiln.server.FeedEvents;

/**
 * Event ticketing, the case issue 40 was found with: events listed from now in pages, seats sold
 * without ever overselling, seats held for a while (an expiring table), and a live page of an
 * event's sales and holds over server-sent events. Its two hard parts are kiln's now: a listing
 * whose range starts at "now" pages with the database's own token (the token binds the listing,
 * not its moving bound), and two feeds stream as one with one {@code Last-Event-ID}
 * ({@link FeedEvents}), a hold's expiry arriving as an event. TicketsAppTest drives it over HTTP.
 * Run it with {@code make demo APP=kiln.kilim.example.TicketsApp}.
 */
public final class TicketsApp {
    /** How long a hold keeps its seat unless the request says ({@code ?holdMs=}). */
    static final Duration HOLD = Duration.ofMinutes(5);

    private TicketsApp() {
    }

    /** An event, stored and sent as JSON. */
    public record Event(long id, String name, long startsAt, int seats) {
    }

    /** What a client sends to create an event, buy seats, or hold one. */
    public record Order(String name, Long startsAt, Integer seats, Integer seat, String user) {
    }

    /** @return the routes over {@code db} */
    public static Router routes(Db db) {
        Table<Long, Event> events = db.table("tickets.events", Codec.LONG, Codec.json(Event.class));
        Index<Tuple, Long, Event> byStart = db.index(events, "tickets.events.by-start", Codec.TUPLE, (id, e) -> Tuple.of(e.startsAt(), id));
        Sequence ids = db.sequence("tickets.events");
        Table<Long, Long> sold = db.table("tickets.sold", Codec.LONG, Codec.LONG);                // event -> seats sold
        Table<Tuple, String> holds = db.expiringTable("tickets.holds", Codec.TUPLE, Codec.STRING, HOLD);  // (event, seat) -> who
        ChangeFeed<Long, Long> sales = db.changeFeed(sold, 1_000);
        ChangeFeed<Tuple, String> held = db.changeFeed(holds, 1_000);

        return new Router()
            .post("/events", req -> {
                Order o = req.json(Order.class);
                if (o.name() == null || o.startsAt() == null || o.seats() == null || o.seats() < 1) {
                    throw new HttpException(400, "an event needs a name, startsAt (ms since the epoch) and seats >= 1");
                }
                Event e = await(db.write(txn -> {
                    Event created = new Event(ids.next(txn), o.name(), o.startsAt(), o.seats());
                    events.put(txn, created.id(), created);
                    return created;
                }));
                return Response.created("/events/" + e.id(), e);
            })
            .get("/events/upcoming", req -> {
                long now = System.currentTimeMillis();  // a bound that moves: the token still resumes the listing
                Range<Tuple> upcoming = Range.closedOpen(Tuple.of(now), Tuple.of(Long.MAX_VALUE))
                    .limit(req.intParam("limit", 20, 1, 100)).after(req.param("after"));
                Page<Long, Event> page = await(db.read(txn -> byStart.range(txn, upcoming)));
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("events", page.rows().stream().map(Page.Row::value).toList());
                body.put("next", page.continuation());
                return Response.json(body);
            })
            .post("/events/{id}/tickets", req -> {                   // {"seats": 2}
                long id = req.pathParamLong("id");
                int want = seats(req.json(Order.class).seats());
                Long left = await(db.write(txn -> {                  // one writer: no two buyers see the same count
                    Event e = events.get(txn, id);
                    if (e == null) throw new HttpException(404, "no event " + id);
                    long now = sold.get(txn, id, 0L);
                    if (now + want > e.seats()) return null;
                    sold.put(txn, id, now + want);
                    return e.seats() - now - want;
                }));
                if (left == null) throw new HttpException(409, "sold out: fewer than " + want + " seats left");
                return Response.created("/events/" + id, Map.of("bought", want, "left", left));
            })
            .post("/events/{id}/holds", req -> {                     // {"seat": 12, "user": "ada"}; ?holdMs= for a shorter hold
                long id = req.pathParamLong("id");
                Order o = req.json(Order.class);
                if (o.seat() == null || o.user() == null) throw new HttpException(400, "a hold needs a seat and a user");
                Duration hold = Duration.ofMillis(req.intParam("holdMs", (int) HOLD.toMillis(), 100, (int) HOLD.toMillis()));
                boolean taken = await(db.write(txn -> {
                    String by = holds.get(txn, Tuple.of(id, o.seat()));  // an expired hold reads as none
                    if (by != null && !by.equals(o.user())) return false;
                    holds.put(txn, Tuple.of(id, o.seat()), o.user(), hold);
                    return true;
                }));
                if (!taken) throw new HttpException(409, "seat " + o.seat() + " is held by someone else");
                return Response.created("/events/" + id, Map.of("seat", o.seat(), "heldMs", hold.toMillis()));
            })
            .get("/events/{id}/live", req -> {                       // sales and holds in one stream, resumable
                long id = req.pathParamLong("id");
                return ServerSentEvents.response(FeedEvents.builder()
                    .add(sales.prefix(id), (out, eventId, set) -> out.event(eventId, "sold", Json.writeString(Map.of("sold", lastValue(set)))))
                    .add(held.prefix(Tuple.of(id)), (out, eventId, set) -> out.event(eventId, "holds", Json.writeString(holdChanges(set))))
                    .resumeFrom(req)
                    .build());
            });
    }

    private static int seats(Integer n) {
        if (n == null || n < 1 || n > 10) throw new HttpException(400, "seats must be 1..10");
        return n;
    }

    private static long lastValue(ChangeSet<Long, Long> set) {
        ChangeSet.Change<Long, Long> last = set.changes().get(set.changes().size() - 1);
        return last.deleted() ? 0 : last.value();
    }

    /** @return each change of a set of holds: the seat, and who holds it, or that its hold expired or was let go */
    private static List<Map<String, Object>> holdChanges(ChangeSet<Tuple, String> set) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (ChangeSet.Change<Tuple, String> c : set.changes()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("seat", c.key().getLong(1));
            m.put(c.deleted() ? (c.expired() ? "expired" : "released") : "heldBy", c.deleted() ? true : c.value());
            out.add(m);
        }
        return out;
    }


    /** {@code make demo APP=kiln.kilim.example.TicketsApp}; {@code --help} for the options. */
    public static void main(String[] args) {
        KilimMain.serve("tickets", "Event ticketing: pages from now, no overselling, expiring holds, a live page.", args, TicketsApp::routes);
    }
}

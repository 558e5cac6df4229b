package kiln.demo.board;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.IdempotencyKeys;
import kiln.db.Index;
import kiln.db.Page;
import kiln.db.PrefixFeed;
import kiln.db.Query;
import kiln.db.Range;
import kiln.db.Sequence;
import kiln.db.Table;
import kiln.db.Tuple;
import kiln.http.HttpException;
import kiln.http.Json;
import kiln.http.Response;
import kiln.http.Request;
import kiln.http.ServerSentEvents;
import kiln.server.AbstractRouter;
import kiln.server.FeedEvents;
import kiln.server.Step;

/**
 * A live message board, the worked example of docs/data.md, written once as {@link Step}s so that it
 * runs on every front end (kilim, loom, Jetty, Undertow, Comsat): users with a unique
 * e-mail address, sessions that expire, rooms of messages read newest first in pages, a count and
 * the last message's time per room, a user's messages by an index, and each room's messages as
 * server-sent events. No key is encoded by hand, no count is kept by hand, no reader scans other
 * rooms' changes. A write is one {@link Step#after} (the handler continues once the commit is durable,
 * however its front end waits); a read runs inline. Tested by MessageBoardTest and the conformance
 * suite's BoardTest; serve it with {@code --app board} on any front end's jar
 * ({@code make demo ARGS="--app board" [SERVER=...]}), then:
 * <pre>
 * curl --json '{"name":"ada","email":"ada@example.org"}' http://127.0.0.1:8080/users
 * curl --json '{"email":"ada@example.org"}' http://127.0.0.1:8080/sessions          # {"token":"..."}
 * curl -H 'Authorization: Bearer TOKEN' --json '{"text":"hello"}' http://127.0.0.1:8080/rooms/lobby/messages
 * curl -H 'Authorization: Bearer TOKEN' -H 'Idempotency-Key: 7c1f...' --json '{"text":"once"}' http://127.0.0.1:8080/rooms/lobby/messages
 * curl http://127.0.0.1:8080/rooms/lobby/messages                               # newest first, "next" for the page after
 * curl -N http://127.0.0.1:8080/rooms/lobby/events                              # live
 * </pre>
 * A session is had by naming an e-mail address: the example shows expiring rows, not authentication.
 * A post sent with an {@code Idempotency-Key} is safe to retry ({@link IdempotencyKeys}): the same
 * key again gets the first answer and posts nothing.
 */
public final class MessageBoard {
    /** How long a session lasts unless {@link #addTo(AbstractRouter, Db, Duration)} says otherwise. */
    public static final Duration SESSION = Duration.ofHours(12);
    /** How long a post's {@code Idempotency-Key} is kept after its first use: Stripe's 24 hours. */
    public static final Duration KEY_KEPT = Duration.ofHours(24);
    /** The routes, as lines for {@code --help}. */
    public static final String USAGE = String.join("\n",
        "  POST /users                       {\"name\":..,\"email\":..}: a user (409 when the e-mail is taken)",
        "  POST /sessions                    {\"email\":..}: {\"token\":..}, a session that expires",
        "  POST /rooms/{room}/messages       {\"text\":..} with Authorization: Bearer TOKEN; add Idempotency-Key: KEY to make",
        "                                    a retry safe (the first answer again, nothing posted; 422: the key with another post)",
        "  GET  /rooms/{room}/messages       newest first, ?limit=N&after=NEXT for the next page",
        "  GET  /rooms/{room}                the room's message count and last time",
        "  GET  /users/{name}/messages       a user's messages, newest first",
        "  GET  /rooms/{room}/events         server-sent events: the room's new messages (Last-Event-ID resumes)") + "\n";
    /** Change sets of the messages table kept for a subscriber to resume from (Last-Event-ID). */
    static final int WINDOW = 10_000;

    private MessageBoard() {
    }

    /** A user: {@code {"id":1,"name":"ada","email":"ada@example.org"}}. */
    public record User(long id, String name, String email) {
    }

    /** A message, keyed {@code Tuple.of(room, id)}: ids come from one sequence, so they order a room's messages by time. */
    public record Message(String room, long id, String author, String text, long at) {
    }

    /**
     * Registers the board's routes over {@code db}, with 12-hour sessions, on any front end's router.
     *
     * @return {@code router}, for chaining
     */
    public static <R extends AbstractRouter<?, R>> R addTo(R router, Db db) {
        return addTo(router, db, SESSION);
    }

    /**
     * Registers the board's routes over {@code db}, whose sessions last {@code session}: {@code POST
     * /users}, {@code POST /sessions}, {@code POST /rooms/{room}/messages} (Authorization: Bearer; an
     * Idempotency-Key makes it safe to retry, kept {@link #KEY_KEPT}),
     * {@code GET /rooms/{room}/messages?limit=N&after=C}, {@code GET /rooms/{room}}, {@code GET
     * /users/{name}/messages}, {@code GET /rooms/{room}/events} (server-sent events, Last-Event-ID).
     *
     * @return {@code router}, for chaining
     */
    public static <R extends AbstractRouter<?, R>> R addTo(R router, Db db, Duration session) {
        // the data model: five declarations, no encoding by hand
        Table<Long, User> users = db.table("board.users", Codec.LONG, Codec.json(User.class));
        Index<String, Long, User> byEmail = db.uniqueIndex(users, "board.users.by-email", Codec.STRING, (id, u) -> u.email());
        Table<String, Long> sessions = db.expiringTable("board.sessions", Codec.STRING, Codec.LONG, session);
        Table<Tuple, Message> messages = db.table("board.messages", Codec.TUPLE, Codec.json(Message.class));
        Index<Tuple, Tuple, Message> byAuthor = db.index(messages, "board.messages.by-author", Codec.TUPLE,
            (key, m) -> Tuple.of(m.author(), m.id()));
        ChangeFeed<Tuple, Message> feed = db.changeFeed(messages, WINDOW);
        Sequence userIds = db.sequence("board.users");
        Sequence messageIds = db.sequence("board.messages");
        IdempotencyKeys<Message> posted = db.idempotencyKeys("board.post-keys", Codec.json(Message.class), KEY_KEPT);
        SecureRandom random = new SecureRandom();

        return router
            .steps("POST", "/users", req -> {
                User asked = req.json(User.class);
                if (blank(asked.name()) || blank(asked.email())) throw new HttpException(400, "a user needs a name and an email");
                return Step.after(db.write(txn -> {
                    User u = new User(userIds.next(txn), asked.name(), asked.email());
                    users.put(txn, u.id(), u);             // the unique index refuses a taken e-mail: 409
                    return u;
                }), user -> Step.of(Response.created("/users/" + user.id(), user)));
            })
            .steps("POST", "/sessions", req -> {
                String email = req.json(User.class).email();
                byte[] bytes = new byte[18];
                random.nextBytes(bytes);
                String token = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
                return Step.after(db.write(txn -> {
                    User u = byEmail.get(txn, email == null ? "" : email);
                    if (u == null) return null;
                    sessions.put(txn, token, u.id());        // expires after the table's time to live
                    return u.id();
                }), user -> {
                    if (user == null) throw new HttpException(404, "no user with that email");
                    return Step.of(Response.created("/sessions/" + token, Map.of("token", token, "user", user)));
                });
            })
            .steps("POST", "/rooms/{room}/messages", req -> {
                String room = req.pathParam("room");
                String text = req.json(Message.class).text();
                if (blank(text)) throw new HttpException(400, "a message needs a text");
                String token = bearer(req);
                String key = req.header("idempotency-key");      // as sent, quoted ("...", the draft's) or bare (Stripe's)
                long at = System.currentTimeMillis();             // before the write query, which may run more than once
                return Step.after(db.write(txn -> {
                    Long userId = sessions.get(txn, token);   // an expired session reads as none
                    User author = userId == null ? null : users.get(txn, userId);
                    if (author == null) return null;
                    Query<Message> post = t -> {
                        long id = messageIds.next(t);
                        Message m = new Message(room, id, author.name(), text, at);
                        messages.put(t, Tuple.of(room, id), m);   // the author index follows in the same write
                        return m;
                    };
                    if (key == null) return post.run(txn);
                    // the key is the author's own; a retry gets the stored message, the key with another post 422
                    return posted.once(txn, Long.toString(author.id()), key, Json.writeString(List.of(room, text)), post);
                }), sent -> {
                    if (sent == null) throw new HttpException(401, "sign in first: POST /sessions, then Authorization: Bearer TOKEN");
                    return Step.of(Response.created("/rooms/" + room + "/messages/" + sent.id(), sent));
                });
            })
            .steps("GET", "/rooms/{room}/messages", req -> {
                Range<Tuple> newest = Range.prefix(Tuple.of(req.pathParam("room"))).reverse()
                    .limit(req.intParam("limit", 20, 1, 100)).after(req.param("after"));   // a forged ?after=: 400
                return Step.after(db.read(txn -> messages.range(txn, newest)), p -> Step.of(page(p)));  // over PostgreSQL, on a read thread
            })
            .steps("GET", "/rooms/{room}", req -> {
                String room = req.pathParam("room");
                return Step.after(db.read(txn -> {
                    Range<Tuple> all = Range.prefix(Tuple.of(room));
                    Page<Tuple, Message> last = messages.range(txn, all.reverse().limit(1));
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("room", room);
                    r.put("messages", messages.count(txn, all));   // counts keys, decodes no message
                    r.put("lastAt", last.rows().isEmpty() ? null : last.rows().get(0).value().at());
                    return r;
                }), about -> Step.of(Response.json(about)));
            })
            .steps("GET", "/users/{name}/messages", req -> {
                Range<Tuple> newest = Range.prefix(Tuple.of(req.pathParam("name"))).reverse()
                    .limit(req.intParam("limit", 20, 1, 100)).after(req.param("after"));
                return Step.after(db.read(txn -> byAuthor.range(txn, newest)), p -> Step.of(page(p)));
            })
            .steps("GET", "/rooms/{room}/events", req -> {
                PrefixFeed<Tuple, Message> room = feed.prefix(Tuple.of(req.pathParam("room")));
                return Step.of(ServerSentEvents.response(FeedEvents.builder()   // woken only by the room's commits
                    .add(room, (events, id, set) -> {
                        for (ChangeSet.Change<Tuple, Message> c : set.changes()) {
                            if (!c.deleted()) events.event(id, "message", Json.writeString(c.value()));
                        }
                    })
                    .resumeFrom(req)
                    .build()));
            });
    }

    private static Response page(Page<Tuple, Message> page) {
        List<Message> rows = new ArrayList<>(page.rows().size());
        for (Page.Row<Tuple, Message> r : page.rows()) rows.add(r.value());
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("messages", rows);
        body.put("next", page.continuation());                 // the client's ?after= for the next page
        return Response.json(body);
    }

    /** @return the bearer token of the request's Authorization field; 401 without one */
    private static String bearer(Request req) {
        String auth = req.header("authorization");
        if (auth == null || !auth.regionMatches(true, 0, "Bearer ", 0, 7) || auth.length() == 7) {
            throw new HttpException(401, "sign in first: POST /sessions, then Authorization: Bearer TOKEN");
        }
        return auth.substring(7).trim();
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }

}

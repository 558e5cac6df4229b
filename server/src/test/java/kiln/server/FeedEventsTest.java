package kiln.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import kiln.db.ChangeFeed;
import kiln.db.ChangeSet;
import kiln.db.Codec;
import kiln.db.Db;
import kiln.db.Table;
import kiln.db.Tuple;
import kiln.http.BodyOutput;
import kiln.http.HttpException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two feeds in one stream, as a ticket page follows an event's sales and its expiring seat holds:
 * one id that resumes both, the other event's writes never delivered, no spin, and expiries as events.
 */
class FeedEventsTest {
    private static final Pattern EVENT = Pattern.compile("id: ([0-9.]+)\nevent: (\\w+)\ndata: ([^\n]*)\n\n");

    @TempDir Path dir;
    Db db;
    Table<Tuple, Long> sales;      // (event, sale id) -> seats
    Table<Tuple, String> holds;    // (event, seat) -> who holds it, for 1 s
    ChangeFeed<Tuple, Long> salesFeed;
    ChangeFeed<Tuple, String> holdsFeed;

    @BeforeEach
    void open() {
        db = Db.open(dir);
        sales = db.table("sales", Codec.TUPLE, Codec.LONG);
        holds = db.expiringTable("holds", Codec.TUPLE, Codec.STRING, Duration.ofSeconds(1));
        salesFeed = db.changeFeed(sales, 100);
        holdsFeed = db.changeFeed(holds, 100);
    }

    @AfterEach
    void close() {
        db.close();
    }

    private FeedEvents stream(long event, String lastEventId) {
        return FeedEvents.builder()
            .add(salesFeed.prefix(Tuple.of(event)), (events, id, set) -> events.event(id, "sold", describe(set)))
            .add(holdsFeed.prefix(Tuple.of(event)), (events, id, set) -> events.event(id, "holds", describe(set)))
            .resumeFrom(lastEventId)
            .build();
    }

    private static <V> String describe(ChangeSet<Tuple, V> set) {
        StringBuilder s = new StringBuilder();
        for (ChangeSet.Change<Tuple, V> c : set.changes()) {
            s.append(c.key()).append('=').append(c.expired() ? "expired" : c.deleted() ? "deleted" : c.value()).append(' ');
        }
        return s.toString().trim();
    }

    private record Polled(List<String[]> events, CompletableFuture<?> next) {
    }

    /** Polls until the stream waits; @return the events it wrote (id, type, data) and what it waits on */
    private static Polled drain(FeedEvents stream) throws Exception {
        List<String[]> events = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            BodyOutput out = new BodyOutput();
            CompletableFuture<?> next = stream.poll(out);
            Matcher m = EVENT.matcher(new String(out.array(), 0, out.length(), StandardCharsets.UTF_8));
            while (m.find()) events.add(new String[] {m.group(1), m.group(2), m.group(3)});
            if (!next.isDone()) return new Polled(events, next);
        }
        throw new AssertionError("the stream never waited: " + events.size() + " events");
    }

    private void sell(long event, long sale, long seats) {
        db.write(txn -> { sales.put(txn, Tuple.of(event, sale), seats); return null; }).join();
    }

    private void hold(long event, long seat, String who) {
        db.write(txn -> { holds.put(txn, Tuple.of(event, seat), who); return null; }).join();
    }

    @Test
    void twoFeedsInOneStreamWithOneIdThatResumesBoth() throws Exception {
        FeedEvents live = stream(7, null);
        Polled first = drain(live);
        assertEquals(List.of(), first.events, "a new subscriber starts at the newest sets");
        sell(7, 1, 2);
        first.next.get(10, TimeUnit.SECONDS);  // a sale of event 7 wakes the stream (on the wake thread, just after the commit)
        hold(7, 12, "ada");
        sell(8, 1, 5);                  // another event's: never sent
        hold(7, 13, "bob");
        Polled second = drain(live);
        List<String> ids = second.events.stream().map(e -> e[0]).toList();
        List<String> types = second.events.stream().map(e -> e[1]).toList();
        assertEquals(List.of("sold", "holds", "holds"), types);
        assertEquals(List.of("(7, 1)=2", "(7, 12)=ada", "(7, 13)=bob"), second.events.stream().map(e -> e[2]).toList());
        // every part's position (its table's commit sequence number) in every id: the sales part is at 2
        // once its read passed event 8's sale, which it skipped
        assertEquals(List.of("1.0", "2.1", "2.2"), ids);

        // a reconnect with an id it saw resumes both parts: nothing twice, nothing lost
        sell(7, 2, 1);                  // sales 3
        hold(7, 14, "cy");              // holds 3
        Polled resumed = drain(stream(7, "1.1"));
        assertEquals(List.of("sold", "holds", "holds"), resumed.events.stream().map(e -> e[1]).toList());
        assertEquals(List.of("(7, 2)=1", "(7, 13)=bob", "(7, 14)=cy"), resumed.events.stream().map(e -> e[2]).toList());
        assertEquals(List.of("3.1", "3.2", "3.3"), resumed.events.stream().map(e -> e[0]).toList());
    }

    @Test
    void aLastEventIdOfTheWrongShapeIsA400() {
        for (String bad : List.of("1", "1.2.3", "a.b", "-1.2", "1..2", "+1.2")) {
            HttpException e = assertThrows(HttpException.class, () -> stream(7, bad), bad);
            assertEquals(400, e.status());
            assertTrue(e.getMessage().contains("2 decimal numbers joined by '.'"), e.getMessage());
        }
    }

    /** Woken for other events' writes and by nothing at all, a stream writes nothing and waits again on a future not yet complete. */
    @Test
    void aStreamWithNothingToSendNeverHandsBackACompletedFuture() throws Exception {
        FeedEvents live = stream(7, null);
        drain(live);
        for (int i = 0; i < 20; i++) sell(8, i, 1);  // other events only
        Polled again = drain(live);
        assertEquals(List.of(), again.events);
        assertFalse(again.next.isDone(), "waiting, not polling");
        BodyOutput out = new BodyOutput();
        CompletableFuture<?> next = live.poll(out);
        assertEquals(0, out.length());
        assertFalse(next.isDone());
    }

    /** A held seat returning to the pool: its expiry reaches the stream as a change like any other. */
    @Test
    void aRowThatExpiresIsAnEventOfItsFeed() throws Exception {
        FeedEvents live = stream(7, null);
        Polled first = drain(live);
        hold(7, 12, "ada");
        Polled held = drain(live);
        assertEquals(List.of("(7, 12)=ada"), held.events.stream().map(e -> e[2]).toList());
        held.next.get(15, TimeUnit.SECONDS);  // the sweeper deletes it after its 1 s
        Polled expired = drain(live);
        assertEquals(List.of("(7, 12)=expired"), expired.events.stream().map(e -> e[2]).toList());
        assertEquals("0.2", expired.events.get(0)[0]);
        first.next.get(10, TimeUnit.SECONDS);
    }
}

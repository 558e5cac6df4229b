package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import kiln.db.postgresql.PostgresServer;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every front end with {@code --db postgresql://...}, all of them over one PostgreSQL database at
 * once, as servers behind nginx would be: the database endpoints answer as over LMDB, and a commit
 * made through another front end reaches a subscriber of this one's {@code /updates/events}.
 */
class PostgresqlTest {
    @RegisterExtension
    static final PostgresServer POSTGRES = new PostgresServer();
    @RegisterExtension
    static final Servers SERVERS = new Servers("PostgresqlTest", "--db", POSTGRES.url());

    static List<FrontEnd> servers() {
        return FrontEnd.underTest();
    }

    private static HttpResponse<String> get(ServerProcess server, String target) throws Exception {
        return Contract.CLIENT.send(HttpRequest.newBuilder(server.uri(target)).timeout(Duration.ofSeconds(20)).build(),
            HttpResponse.BodyHandlers.ofString());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void theDatabaseEndpointsAnswerAsOverLmdb(FrontEnd fe) throws Exception {
        ServerProcess server = SERVERS.get(fe);
        JsonNode one = Contract.JSON.readTree(get(server, "/db").body());
        assertTrue(one.get("id").asInt() >= 1 && one.get("id").asInt() <= 10_000 && one.has("randomNumber"), one::toString);
        assertEquals(42, Contract.JSON.readTree(get(server, "/worlds/42").body()).get("id").asInt());
        assertEquals(20, Contract.JSON.readTree(get(server, "/queries?queries=20").body()).size());
        JsonNode updated = Contract.JSON.readTree(get(server, "/updates?queries=5").body());
        assertEquals(5, updated.size());
        for (JsonNode row : updated) {
            JsonNode now = Contract.JSON.readTree(get(server, "/worlds/" + row.get("id").asInt()).body());
            assertEquals(row.get("randomNumber"), now.get("randomNumber"), "the update is read back: " + row);
        }
        HttpResponse<String> fortunes = get(server, "/fortunes");
        assertEquals(200, fortunes.statusCode());
        assertTrue(fortunes.body().contains("&lt;script&gt;"), fortunes.body());
        HttpResponse<String> health = get(server, "/healthz");
        assertEquals(200, health.statusCode(), health.body());
        assertEquals("ok", health.body());
    }

    /** A subscriber of this front end gets the commit made through another (the first under test, or the second for the first). */
    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void aCommitThroughAnotherFrontEndReachesThisOnesSubscriber(FrontEnd fe) throws Exception {
        List<FrontEnd> all = servers();
        FrontEnd other = all.get(0) != fe ? all.get(0) : all.size() > 1 ? all.get(1) : fe;
        ServerProcess subscriber = SERVERS.get(fe);
        ServerProcess writer = SERVERS.get(other);
        try (RawConnection events = ServerSentEventsTest.subscribe(RawConnection.open(subscriber), "")) {
            HttpResponse<String> update = get(writer, "/updates?queries=2");
            assertEquals(200, update.statusCode(), update.body());
            JsonNode rows = Contract.JSON.readTree(update.body());
            // other commits of this class may arrive first: read until this one's rows
            for (int i = 0; i < 50; i++) {
                for (ServerSentEventsTest.Event e : ServerSentEventsTest.events(events, 1)) {
                    if (rows.equals(e.data().get("worlds"))) return;
                }
            }
            throw new AssertionError("the commit through " + other.id + " did not reach " + fe.id + "'s subscriber");
        }
    }
}

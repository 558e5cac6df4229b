package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code /live} page in a real browser: headless Chromium opens it, its {@code EventSource}
 * connects to {@code /updates/events}, and each committed {@code /updates} shows up in its table, row
 * by row, with no script error. The page is driven and read through the Chrome DevTools Protocol
 * ({@code Runtime.evaluate}), since a page that never finishes loading (an open event stream) never
 * lets {@code --dump-dom} finish.
 */
class LivePageTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    private ServerProcess kiln;
    private Process chromium;
    private WebSocket devtools;
    private final Map<Integer, CompletableFuture<JsonNode>> responses = new ConcurrentHashMap<>();
    private final List<String> scriptErrors = new CopyOnWriteArrayList<>();
    private final AtomicInteger ids = new AtomicInteger();

    @AfterEach
    void stop() {
        if (devtools != null) devtools.abort();
        if (chromium != null) {
            chromium.descendants().forEach(ProcessHandle::destroyForcibly);
            chromium.destroyForcibly();
        }
        if (kiln != null) kiln.stop();
    }

    @Test
    void theLivePageShowsEachCommittedUpdateAsItHappens() throws Exception {
        kiln = ServerProcess.start(FrontEnd.load(Dirs.repo().resolve("frontends.conf")).stream()
            .filter(f -> f.id.equals("kilim")).findFirst().orElseThrow(), "LivePageTest");
        openInChromium("http://127.0.0.1:" + kiln.port + "/live");
        waitFor("the EventSource to connect", "document.getElementById('status').dataset.state", "open");

        List<JsonNode> updates = new ArrayList<>();
        for (int i = 0; i < 3; i++) updates.add(Contract.getJson(kiln, "/updates?queries=2"));
        waitFor("three commits to arrive", "document.body.dataset.received", "3");

        JsonNode table = Contract.JSON.readTree(evaluate(
            "JSON.stringify([...document.querySelectorAll('#rows tr')].map(tr => [...tr.cells].map(td => td.textContent)))").asText());
        assertEquals(6, table.size(), "one row per updated World row: " + table);
        for (JsonNode update : updates) {
            for (JsonNode world : update) {
                boolean shown = false;
                for (JsonNode row : table) {
                    shown |= row.get(1).asText().equals(world.get("id").asText()) && row.get(2).asText().equals(world.get("randomNumber").asText());
                }
                assertTrue(shown, "row " + world + " is in the page's table " + table);
            }
        }
        assertTrue(table.get(0).get(3).asText().endsWith(" ms"), "the commit-to-page delay is shown: " + table.get(0));
        assertEquals(List.of(), scriptErrors, "script errors on the page");
    }

    /** Starts headless Chromium on {@code url} with the DevTools protocol on, and connects to the page. */
    private void openInChromium(String url) throws Exception {
        Path profile = Files.createTempDirectory(Dirs.target(), "chromium-");
        chromium = new ProcessBuilder("chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--disable-background-networking", "--no-first-run", "--disable-component-update", "--disable-sync",
            "--remote-debugging-port=0", "--user-data-dir=" + profile, url)
            .redirectErrorStream(true).redirectOutput(profile.resolve("chromium.log").toFile()).start();
        Path portFile = profile.resolve("DevToolsActivePort");  // the port Chromium chose, once it listens
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!(Files.exists(portFile) && Files.readAllLines(portFile).size() >= 2)) {
            assertTrue(chromium.isAlive() && System.nanoTime() < deadline,
                "Chromium did not open its DevTools port (apt-get install chromium): " + Files.readString(profile.resolve("chromium.log")));
            Thread.sleep(50);
        }
        int port = Integer.parseInt(Files.readAllLines(portFile).get(0).trim());
        HttpClient http = HttpClient.newHttpClient();
        String pageSocket = null;
        while (pageSocket == null) {
            HttpResponse<String> list = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/json/list")).build(),
                HttpResponse.BodyHandlers.ofString());
            for (JsonNode target : Contract.JSON.readTree(list.body())) {
                if ("page".equals(target.get("type").asText()) && target.get("url").asText().equals(url)) {
                    pageSocket = target.get("webSocketDebuggerUrl").asText();
                }
            }
            assertTrue(pageSocket != null || System.nanoTime() < deadline, "no page target for " + url + ": " + list.body());
            Thread.sleep(50);
        }
        devtools = http.newWebSocketBuilder().buildAsync(URI.create(pageSocket), new Listener()).get(10, TimeUnit.SECONDS);
        call("Runtime.enable", "{}");
    }

    /** Evaluates {@code expression} until it gives {@code expected}, for at most {@link #WAIT}. */
    private void waitFor(String what, String expression, String expected) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        String last = null;
        while (System.nanoTime() < deadline) {
            last = evaluate(expression).asText();
            if (expected.equals(last)) return;
            Thread.sleep(50);
        }
        throw new AssertionError("waited " + WAIT.toSeconds() + " s for " + what + ": " + expression + " is " + last
            + "; script errors " + scriptErrors + "; kiln's log: " + kiln.logText());
    }

    /** @return the value of {@code expression} in the page */
    private JsonNode evaluate(String expression) throws Exception {
        JsonNode response = call("Runtime.evaluate", Contract.JSON.writeValueAsString(Map.of("expression", expression, "returnByValue", true)));
        return response.path("result").path("result").path("value");
    }

    private JsonNode call(String method, String params) throws Exception {
        int id = ids.incrementAndGet();
        CompletableFuture<JsonNode> response = new CompletableFuture<>();
        responses.put(id, response);
        devtools.sendText("{\"id\":" + id + ",\"method\":\"" + method + "\",\"params\":" + params + "}", true).get(10, TimeUnit.SECONDS);
        return response.get(10, TimeUnit.SECONDS);
    }

    /** Routes DevTools responses to their calls; keeps the page's script errors and console errors. */
    private final class Listener implements WebSocket.Listener {
        private final StringBuilder message = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket socket, CharSequence data, boolean last) {
            message.append(data);
            if (last) {
                try {
                    JsonNode m = Contract.JSON.readTree(message.toString());
                    if (m.has("id")) {
                        CompletableFuture<JsonNode> response = responses.remove(m.get("id").asInt());
                        if (response != null) response.complete(m);
                    } else if ("Runtime.exceptionThrown".equals(m.path("method").asText())) {
                        scriptErrors.add(m.path("params").path("exceptionDetails").toString());
                    } else if ("Runtime.consoleAPICalled".equals(m.path("method").asText())
                        && "error".equals(m.path("params").path("type").asText())) {
                        scriptErrors.add(m.path("params").path("args").toString());
                    }
                } catch (Exception e) {
                    scriptErrors.add("unreadable DevTools message: " + e);
                }
                message.setLength(0);
            }
            socket.request(1);
            return null;
        }
    }
}

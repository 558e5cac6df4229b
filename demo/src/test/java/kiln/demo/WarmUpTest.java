package kiln.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The warm-up asks only for what changes nothing and ends by itself. */
class WarmUpTest {
    @Test
    void itWarmsTheReadOnlyEndpointsAndNeverAWriteAStreamOrADelay() {
        List<String> skipped = Endpoints.ALL.stream().filter(e -> !WarmUp.isSafe(e)).map(e -> e.example).sorted().toList();
        assertEquals(List.of("/hello?delay=100", "/updates/events", "/updates?queries=20", "/worlds/42/events"), skipped);
    }
}

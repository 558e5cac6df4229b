package kiln.conformance;

import java.util.List;
import java.util.Locale;

/**
 * One attack of {@link HostileClientsTest} at full size against a server already running, with the
 * probe watching, for measurements beyond what {@code make test} runs (issue 36's "done when": 5,000
 * connections that each send a head and 64 KiB less one byte, then 20,000 that send only a head,
 * against {@code make demo}'s defaults). {@code make bench-hostile} starts the server and runs the
 * attacks, two attacker processes for the 20,000 (an open-files limit of 20,000 per process).
 *
 * <pre>
 * java -cp ... kiln.conformance.HostileBench PORT ATTACK CONNECTIONS FIRST_ADDRESS HOLD_S [probe]
 *   ATTACK: partial (a head declaring 64 KiB, then 65,535 bytes) | heads (the head only)
 * </pre>
 * Prints one line: the statuses received, how many the server closed, the slowest close after a
 * connection's last byte, and with {@code probe}, the probe's /plaintext latency (p50, p99, max, ms)
 * and the server's heap and request memory at their peaks (MB).
 */
public final class HostileBench {
    private HostileBench() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: HostileBench PORT partial|heads CONNECTIONS FIRST_ADDRESS HOLD_S [probe]");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        String attack = args[1];
        int n = Integer.parseInt(args[2]);
        String head = "POST /json HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n";
        Swarm.Script script = Swarm.Script.sending(switch (attack) {
            case "partial" -> head + "a".repeat(65_535);
            case "heads" -> head;
            default -> throw new IllegalArgumentException("ATTACK is partial or heads, got " + attack);
        });
        script.perAddress = 50;
        script.firstAddress = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]) * 1000;
        boolean probing = args.length > 5 && args[5].equals("probe");
        long started = System.nanoTime();
        try (Probe probe = probing ? new Probe(port) : null; Swarm swarm = new Swarm(port)) {
            List<Swarm.Conn> conns = swarm.start(n, script);
            Swarm.awaitConnected(conns, 60_000);
            long connectedMs = RobustnessTest.millisSince(started);
            int open = Swarm.awaitClosed(conns, holdMs);
            if (probe != null) probe.close();
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%s %d: connected in %d ms; closed by the server %d, still open %d;"
                    + " slowest close %d ms after the last byte; statuses %s", attack, n, connectedMs, n - open, open,
                Swarm.slowestCloseMs(conns), Swarm.statuses(conns)));
            if (probe != null) {
                line.append(String.format(Locale.ROOT, "; /plaintext p50 %.1f ms p99 %.1f ms max %.1f ms over %d requests, %d failed;"
                        + " heap peak %.0f MB; request memory peak %.1f of %.0f MB", probe.latencyMs(0.5),
                    probe.latencyMs(0.99), probe.latencyMs(1.0), probe.requests(), probe.failures(), probe.heapPeak() / 1048576,
                    probe.requestMemoryPeak() / 1048576, probe.requestMemoryLimit() / 1048576));
            }
            System.out.println(line);
            System.out.flush();
        }
        System.exit(0);
    }
}

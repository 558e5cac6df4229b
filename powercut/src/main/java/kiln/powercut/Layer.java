package kiln.powercut;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One mount of the power-cut filesystem ({@code fs/powercutfs.py}, FUSE): {@code mountPoint} shows
 * {@code backing}, and writes not yet fsynced live only in the layer's memory until a {@link #cut}
 * throws them away. Driven through the layer's line protocol on its standard input and output.
 */
final class Layer implements AutoCloseable {
    /** What to install when the layer cannot mount; the test fails with it rather than skip. */
    static final String NEEDS = "the power-cut test needs FUSE: /dev/fuse, root (or fusermount3), and"
        + " apt-get install -y fuse3 python3-pyfuse3";

    private final Process process;
    private final Writer commands;
    private final BlockingQueue<String> responses = new LinkedBlockingQueue<>();
    private final Path stderr;

    private Layer(Process process, Path stderr) {
        this.process = process;
        this.stderr = stderr;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread pump = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) responses.add(line);
            } catch (IOException ignored) {
                // the layer exited; what it said is in responses
            }
        }, "powercutfs-stdout");
        pump.setDaemon(true);
        pump.start();
    }

    /**
     * Mounts the layer and waits until it serves.
     *
     * @throws IllegalStateException naming what to install when it does not mount
     */
    static Layer mount(Path script, Path backing, Path mountPoint) throws IOException, InterruptedException {
        if (!Files.exists(Path.of("/dev/fuse"))) throw new IllegalStateException("/dev/fuse is missing: " + NEEDS);
        if (!Files.isRegularFile(script)) throw new IllegalStateException("no power-cut filesystem at " + script.toAbsolutePath());
        Files.createDirectories(backing);
        Files.createDirectories(mountPoint);
        Path err = Files.createTempFile("powercutfs-", ".stderr");
        Process p = new ProcessBuilder(List.of("python3", script.toString(), backing.toString(), mountPoint.toString()))
            .redirectError(err.toFile()).start();
        Layer layer = new Layer(p, err);
        String first = layer.responses.poll(30, TimeUnit.SECONDS);
        if (!"mounted".equals(first)) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
            throw new IllegalStateException("the power-cut filesystem did not mount (" + first + "): " + layer.stderr() + "; " + NEEDS);
        }
        return layer;
    }

    /** Sends one command and returns the layer's one-line answer ({@code ok ...} or {@code error ...}). */
    String command(String line) throws IOException, InterruptedException {
        commands.write(line + "\n");
        commands.flush();
        String response = responses.poll(30, TimeUnit.SECONDS);
        if (response == null) throw new IOException("the power-cut filesystem did not answer '" + line + "': " + stderr());
        return response;
    }

    /**
     * Cuts the power: every write not yet fsynced is lost ({@code seed} null), or a random half of
     * them reached the disk first ({@code cut-random}); then the layer unmounts and exits.
     *
     * @return the layer's answer, e.g. {@code ok cut dropped_pages=12 dropped_bytes=49152 files=1}
     */
    String cut(Long seed) throws IOException, InterruptedException {
        String response = command(seed == null ? "cut" : "cut-random " + seed);
        if (!process.waitFor(30, TimeUnit.SECONDS)) throw new IOException("the power-cut filesystem did not exit after a cut");
        if (!response.startsWith("ok")) throw new IOException("cut failed: " + response + " " + stderr());
        return response;
    }

    private String stderr() {
        try {
            return Files.readString(stderr).strip().replace('\n', ' ');
        } catch (IOException e) {
            return "(stderr unreadable: " + e + ")";
        }
    }

    /** Unmounts (as a cut) if the layer still runs. */
    @Override
    public void close() throws IOException, InterruptedException {
        if (process.isAlive()) {
            try {
                command("cut");
            } catch (IOException e) {
                // it is going anyway
            }
            if (!process.waitFor(30, TimeUnit.SECONDS)) process.destroyForcibly();
        }
        Files.deleteIfExists(stderr);
    }
}

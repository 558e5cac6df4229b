package kiln.conformance;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A child process run to its end: its exit code and its standard output and error, merged. */
final class Command {
    final int exitCode;
    final String output;

    private Command(int exitCode, String output) {
        this.exitCode = exitCode;
        this.output = output;
    }

    /**
     * Runs {@code command} with nothing on its standard input and waits for it.
     *
     * @throws IOException     when it cannot be started (e.g. not installed)
     * @throws AssertionError  when it has not exited {@code timeoutSeconds} after closing its output
     */
    static Command run(long timeoutSeconds, List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String output;
        try (InputStream out = p.getInputStream()) {
            output = new String(out.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command.get(0) + " did not exit within " + timeoutSeconds + " s:\n" + output);
        }
        return new Command(p.exitValue(), output);
    }
}

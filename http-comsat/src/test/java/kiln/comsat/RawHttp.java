package kiln.comsat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One request on a fresh loopback connection, read back as text, for wire-level checks. */
final class RawHttp {
    private static final Pattern CONTENT_LENGTH = Pattern.compile("\r\nContent-Length: (\\d+)\r\n");

    private RawHttp() {
    }

    /**
     * Sends {@code request} (bytes as given) and reads until the response's Content-Length worth of
     * body has arrived or the server closes the connection (10 s read timeout).
     *
     * @return the response with its Date value replaced by {@code D}
     */
    static String exchange(int port, String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            while (!complete(got.toString(StandardCharsets.US_ASCII))) {
                int n = in.read(buf);
                if (n < 0) break;
                got.write(buf, 0, n);
            }
            return got.toString(StandardCharsets.US_ASCII).replaceFirst("\r\nDate: [^\r]*\r\n", "\r\nDate: D\r\n");
        }
    }

    private static boolean complete(String response) {
        int end = response.indexOf("\r\n\r\n");
        if (end < 0) return false;
        Matcher m = CONTENT_LENGTH.matcher(response.substring(0, end + 2));
        return m.find() && response.length() - (end + 4) >= Integer.parseInt(m.group(1));
    }
}

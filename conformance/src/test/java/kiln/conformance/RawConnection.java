package kiln.conformance;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A client TCP connection for wire-level checks: writes requests byte for byte and reads responses
 * framed by Content-Length (every kiln response has one). Reads time out after
 * {@link #READ_TIMEOUT_MS} ms, so a server that stops answering fails the test instead of hanging it.
 */
final class RawConnection implements AutoCloseable {
    static final int READ_TIMEOUT_MS = 10_000;
    private static final int MAX_HEAD_BYTES = 64 * 1024;
    private static final Pattern CONTENT_LENGTH = Pattern.compile("\r\nContent-Length: *(\\d+) *\r\n", Pattern.CASE_INSENSITIVE);

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    private final int timeoutMs;
    /** A chunk's data was read and the CRLF after it not yet ({@link #readChunk}). */
    private boolean chunkEndPending;

    private RawConnection(Socket socket, int timeoutMs) throws IOException {
        this.socket = socket;
        this.timeoutMs = timeoutMs;
        this.in = new BufferedInputStream(socket.getInputStream());
        this.out = socket.getOutputStream();
    }

    /** Connects to {@code server} on 127.0.0.1. */
    static RawConnection open(ServerProcess server) {
        return open(server, READ_TIMEOUT_MS);
    }

    /** Connects to {@code server}; connect and every read time out after {@code timeoutMs}. */
    static RawConnection open(ServerProcess server, int timeoutMs) {
        return open(server.frontEnd.id, server.port, timeoutMs);
    }

    /** Connects to {@code port} on 127.0.0.1 (a proxy in front of a server: nginx), named {@code name} in errors. */
    static RawConnection open(String name, int port, int timeoutMs) {
        Socket s = new Socket();
        try {
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(ServerProcess.BIND, port), Math.min(5_000, timeoutMs));
            s.setSoTimeout(timeoutMs);
            return new RawConnection(s, timeoutMs);
        } catch (IOException e) {
            try {
                s.close();
            } catch (IOException ignored) {
                // already failing with the connect error
            }
            throw new UncheckedIOException("cannot connect to " + name + " on port " + port, e);
        }
    }

    /** Wraps a socket connected already (e.g. from another source address); its read timeout stays as set. */
    static RawConnection over(Socket connected) {
        try {
            return new RawConnection(connected, connected.getSoTimeout());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return an HTTP/1.1 GET of {@code target} with only a Host header */
    static String get(String target) {
        return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    }

    /** Writes {@code request} (ISO-8859-1) in one write call. */
    RawConnection send(String request) {
        try {
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("write failed", e);
        }
        return this;
    }

    /** Sends {@code request} and reads one response. */
    RawResponse exchange(String request) {
        return send(request).read();
    }

    /**
     * Reads one response: the head up to CRLF CRLF, then Content-Length bytes of body.
     *
     * @throws AssertionError if the connection ends or times out first, the head uses bare LF
     *         line ends, or there is no Content-Length
     */
    RawResponse read() {
        String head = readHead();
        Matcher m = CONTENT_LENGTH.matcher(head);
        if (!m.find()) throw new AssertionError("response without Content-Length:\n" + head);
        int length = Integer.parseInt(m.group(1));
        try {
            byte[] body = in.readNBytes(length);
            if (body.length != length) {
                throw new AssertionError("connection closed after " + body.length + " of " + length + " body bytes:\n" + head);
            }
            return new RawResponse(head, body);
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no complete body within " + timeoutMs + " ms after\n" + head, e);
        } catch (IOException e) {
            throw new UncheckedIOException("read failed", e);
        }
    }

    /**
     * Reads the response to a HEAD request: the head only, whatever its Content-Length says
     * (RFC 9112 section 6.3: such a response ends at the empty line after the header fields).
     */
    RawResponse readHeadOnly() {
        return new RawResponse(readHead(), new byte[0]);
    }

    /** Reads the head of a response whose body is streamed (chunked, or until the close): read the body with {@link #readChunk}. */
    RawResponse readStreamHead() {
        return new RawResponse(readHead(), new byte[0]);
    }

    /**
     * Reads one chunk of a chunked body (RFC 9112 section 7.1): its size line and its data (the CRLF
     * after the data is checked at the next call); for the last chunk ({@code 0}), its empty
     * trailer section too.
     *
     * @return the chunk's data, UTF-8; "" for the last chunk
     * @throws AssertionError when the framing is broken, the connection ends or the read times out
     */
    String readChunk() {
        try {
            if (chunkEndPending) {
                // Jetty writes a chunk's closing CRLF with the next chunk; an event source reads the data without it
                String end = readLine();
                if (!end.isEmpty()) throw new AssertionError("chunk data not followed by CRLF but '" + end + "'");
                chunkEndPending = false;
            }
            String sizeLine = readLine();
            int size;
            try {
                size = Integer.parseInt(sizeLine, 16);
            } catch (NumberFormatException e) {
                throw new AssertionError("not a chunk size line: '" + sizeLine + "'");
            }
            if (size == 0) {
                String trailerEnd = readLine();
                if (!trailerEnd.isEmpty()) throw new AssertionError("trailer fields after the last chunk: '" + trailerEnd + "'");
                return "";
            }
            byte[] data = in.readNBytes(size);
            if (data.length != size) throw new AssertionError("connection closed after " + data.length + " of a " + size + "-byte chunk");
            chunkEndPending = true;
            return new String(data, StandardCharsets.UTF_8);
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no chunk within " + timeoutMs + " ms", e);
        } catch (IOException e) {
            throw new UncheckedIOException("read failed", e);
        }
    }

    /** @return everything until the server closes, UTF-8 (an HTTP/1.0 streamed body) */
    String readToClose() {
        try {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server did not close within " + timeoutMs + " ms", e);
        } catch (IOException e) {
            throw new UncheckedIOException("read failed", e);
        }
    }

    private String readLine() throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b; (b = in.read()) != '\n'; ) {
            if (b < 0) throw new AssertionError("connection closed in a chunk line after '" + line + "'");
            if (b != '\r') line.append((char) b);
        }
        return line.toString();
    }

    /** Sets this side's receive buffer, bytes: small, a client that does not read fills the server's send path fast. */
    void receiveBuffer(int bytes) {
        try {
            socket.setReceiveBufferSize(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return the next {@code n} bytes as ISO-8859-1 (fewer if the connection ends first), left unread */
    String peek(int n) {
        try {
            in.mark(n);
            String next = new String(in.readNBytes(n), StandardCharsets.ISO_8859_1);
            in.reset();
            return next;
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no " + n + " bytes within " + timeoutMs + " ms", e);
        } catch (IOException e) {
            throw new UncheckedIOException("read failed", e);
        }
    }

    /** @return status line and header fields up to and including the empty line, ISO-8859-1 */
    private String readHead() {
        try {
            ByteArrayOutputStream head = new ByteArrayOutputStream(256);
            int prev = -1;
            while (true) {
                int b = in.read();
                if (b < 0) {
                    throw new AssertionError("connection closed after " + head.size() + " bytes of a response head: "
                        + head.toString(StandardCharsets.ISO_8859_1));
                }
                if (b == '\n' && prev != '\r') {
                    throw new AssertionError("bare LF in the response head (RFC 9112 section 2.2 wants CRLF): "
                        + head.toString(StandardCharsets.ISO_8859_1));
                }
                head.write(b);
                prev = b;
                if (head.size() > MAX_HEAD_BYTES) throw new AssertionError("response head longer than " + MAX_HEAD_BYTES + " bytes");
                if (b == '\n' && endsWithBlankLine(head)) return head.toString(StandardCharsets.ISO_8859_1);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no complete response head within " + timeoutMs + " ms", e);
        } catch (IOException e) {
            throw new UncheckedIOException("read failed", e);
        }
    }

    private static boolean endsWithBlankLine(ByteArrayOutputStream head) {
        byte[] h = head.toByteArray();
        int n = h.length;
        return n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n';
    }

    /**
     * Checks that the server closed the connection: the next read sees end of stream (or a reset)
     * before the read timeout, with no further bytes.
     *
     * @return null if closed, otherwise what happened instead (for the assertion message)
     */
    String closedByServer() {
        try {
            int b = in.read();
            if (b < 0) return null;
            byte[] more = new byte[Math.min(in.available(), 200)];
            int n = in.read(more);
            return "server sent more bytes instead of closing: " + (char) b + new String(more, 0, Math.max(n, 0), StandardCharsets.ISO_8859_1);
        } catch (SocketTimeoutException e) {
            return "server kept the connection open for " + timeoutMs + " ms";
        } catch (SocketException e) {
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException("read failed", e);
        }
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing our side only; nothing left to check
        }
    }
}

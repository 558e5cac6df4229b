import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Iterator;
import java.util.Locale;

/**
 * The sweep's floor anchor: a minimal single-threaded Java NIO server that answers every request with
 * the same bytes a kiln front end sends for {@code GET /hello} (status line, {@code Server: kiln},
 * {@code Date}, {@code Content-Type: text/plain; charset=UTF-8}, {@code Content-Length: 10}, body
 * {@code HelloWorld}). It does no routing, no database work and no allocation per request, so its CPU
 * time per request is what the JVM and the kernel's loopback cost on this machine.
 *
 * <p>Run without a build (JDK 11+ single-file launch): {@code java sweep/DummyServer.java --port 0}.
 * Prints {@code kiln-dummy listening on http://HOST:PORT/} when ready, like every front end.
 *
 * <p>Keep-alive follows RFC 9112 section 9.3: HTTP/1.1 persists unless the request says
 * {@code Connection: close}; HTTP/1.0 closes unless it says {@code Connection: keep-alive} (ApacheBench
 * {@code -k}), and then the response carries {@code Connection: keep-alive}. Pipelined requests are
 * answered in order. Request bodies are not read (GET only): this is a benchmark anchor, not an HTTP
 * implementation to trust with hostile input.
 */
public final class DummyServer {
    private static final DateTimeFormatter IMF_FIXDATE =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);
    private static final byte[] CRLFCRLF = {'\r', '\n', '\r', '\n'};
    /** A request head longer than this is refused by closing the connection. */
    private static final int MAX_HEAD = 8192;
    private static final String USAGE =
        "Usage: java sweep/DummyServer.java [--port N] [--bind ADDR]\n"
            + "  --port N     TCP port, 0 picks a free one (default 8080)\n"
            + "  --bind ADDR  address to listen on (default 127.0.0.1)\n";

    /** Response bytes up to and including the Date value, per HTTP version. */
    private final byte[] head10 = ascii("HTTP/1.0 200 OK\r\nServer: kiln\r\nDate: ");
    private final byte[] head11 = ascii("HTTP/1.1 200 OK\r\nServer: kiln\r\nDate: ");
    private final byte[] tail = ascii("\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: 10\r\n");
    private final byte[] keepAliveHeader = ascii("Connection: keep-alive\r\n");
    private final byte[] closeHeader = ascii("Connection: close\r\n");
    private final byte[] body = ascii("\r\nHelloWorld");
    private long dateSecond = -1;
    private byte[] date;

    /** Per-connection buffers; requests are parsed from {@code in}, responses queued in {@code out}. */
    private static final class Conn {
        final ByteBuffer in = ByteBuffer.allocate(MAX_HEAD);
        ByteBuffer out = ByteBuffer.allocate(4096);
        boolean closeAfterWrite;
    }

    public static void main(String[] args) throws IOException {
        int port = 8080;
        String bind = "127.0.0.1";
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help") || a.equals("-h")) {
                System.out.print(USAGE);
                return;
            } else if ((a.equals("--port") || a.equals("--bind")) && i + 1 < args.length) {
                String v = args[++i];
                if (a.equals("--bind")) {
                    bind = v;
                    continue;
                }
                try {
                    port = Integer.parseInt(v);
                } catch (NumberFormatException e) {
                    port = -1;
                }
                if (port < 0 || port > 65535) {
                    usageError("--port must be 0..65535, got '" + v + "'");
                }
            } else {
                usageError("unknown or incomplete option '" + a + "'");
            }
        }
        ServerSocketChannel server = ServerSocketChannel.open();
        server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        try {
            server.bind(new InetSocketAddress(bind, port), 4096);
        } catch (BindException e) {
            System.err.println("kiln-dummy: cannot listen on " + bind + ":" + port + ": " + e.getMessage());
            System.exit(1);
        }
        int actual = ((InetSocketAddress) server.getLocalAddress()).getPort();
        System.out.println("kiln-dummy listening on http://" + bind + ":" + actual + "/");
        System.out.flush();
        new DummyServer().serve(server);
    }

    private static void usageError(String message) {
        System.err.println("kiln-dummy: " + message);
        System.err.print(USAGE);
        System.exit(2);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private void serve(ServerSocketChannel server) throws IOException {
        Selector selector = Selector.open();
        server.configureBlocking(false);
        server.register(selector, SelectionKey.OP_ACCEPT);
        while (true) {
            selector.select();
            refreshDate();
            Iterator<SelectionKey> it = selector.selectedKeys().iterator();
            while (it.hasNext()) {
                SelectionKey key = it.next();
                it.remove();
                try {
                    if (!key.isValid()) {
                        continue;
                    }
                    if (key.isAcceptable()) {
                        accept(server, selector);
                    } else {
                        if (key.isWritable()) {
                            flush(key);
                        }
                        if (key.isValid() && key.isReadable()) {
                            read(key);
                        }
                    }
                } catch (IOException e) {
                    // A peer reset is routine under load (ab closing thousands of sockets): drop it.
                    closeQuietly(key);
                }
            }
        }
    }

    private void refreshDate() {
        long now = System.currentTimeMillis() / 1000;
        if (now != dateSecond) {
            dateSecond = now;
            date = ascii(IMF_FIXDATE.format(Instant.ofEpochSecond(now)));
        }
    }

    private static void accept(ServerSocketChannel server, Selector selector) throws IOException {
        // Drain the backlog: at 20000 connections one accept per wake-up would starve the clients.
        SocketChannel ch;
        while ((ch = server.accept()) != null) {
            ch.configureBlocking(false);
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.register(selector, SelectionKey.OP_READ, new Conn());
        }
    }

    private void read(SelectionKey key) throws IOException {
        Conn c = (Conn) key.attachment();
        SocketChannel ch = (SocketChannel) key.channel();
        int n = ch.read(c.in);
        if (n < 0) {
            closeQuietly(key);
            return;
        }
        ByteBuffer in = c.in;
        in.flip();
        int start = 0;
        int end;
        while (!c.closeAfterWrite && (end = indexOf(in, start, CRLFCRLF)) >= 0) {
            respond(c, in, start, end);
            start = end + CRLFCRLF.length;
        }
        in.position(start);
        in.compact();
        if (!in.hasRemaining() && !c.closeAfterWrite) {
            closeQuietly(key);
            return;
        }
        flush(key);
    }

    /** Queues the response to the request head in {@code in[start, end)}. */
    private void respond(Conn c, ByteBuffer in, int start, int end) {
        int lineEnd = indexOf(in, start, new byte[] {'\r', '\n'});
        boolean http10 = lineEnd - start >= 8 && regionEquals(in, lineEnd - 8, "HTTP/1.0");
        String connection = connectionHeader(in, lineEnd, end);
        boolean keepAlive = http10 ? "keep-alive".equals(connection) : !"close".equals(connection);
        ensureRoom(c, 256);
        ByteBuffer out = c.out;
        out.put(http10 ? head10 : head11).put(date).put(tail);
        if (!keepAlive) {
            out.put(closeHeader);
            c.closeAfterWrite = true;
        } else if (http10) {
            out.put(keepAliveHeader);
        }
        out.put(body);
    }

    /** @return the lower-cased value of the Connection header in {@code in[from, to)}, or null */
    private static String connectionHeader(ByteBuffer in, int from, int to) {
        int line = from + 2;
        while (line < to) {
            int eol = indexOf(in, line, new byte[] {'\r', '\n'});
            if (eol < 0 || eol > to) {
                eol = to;
            }
            if (eol - line > 11 && regionEqualsIgnoreCase(in, line, "connection:")) {
                byte[] v = new byte[eol - line - 11];
                for (int i = 0; i < v.length; i++) {
                    v[i] = in.get(line + 11 + i);
                }
                return new String(v, StandardCharsets.US_ASCII).trim().toLowerCase(Locale.ROOT);
            }
            line = eol + 2;
        }
        return null;
    }

    private static void ensureRoom(Conn c, int bytes) {
        if (c.out.remaining() < bytes) {
            ByteBuffer bigger = ByteBuffer.allocate(Math.max(c.out.capacity() * 2, c.out.position() + bytes));
            c.out.flip();
            bigger.put(c.out);
            c.out = bigger;
        }
    }

    private static void flush(SelectionKey key) throws IOException {
        Conn c = (Conn) key.attachment();
        ByteBuffer out = c.out;
        if (out.position() > 0) {
            out.flip();
            ((SocketChannel) key.channel()).write(out);
            out.compact();
        }
        if (out.position() > 0) {
            // Socket buffer full: stop reading new requests until the queued responses are written.
            key.interestOps(SelectionKey.OP_WRITE);
        } else if (c.closeAfterWrite) {
            closeQuietly(key);
        } else {
            key.interestOps(SelectionKey.OP_READ);
        }
    }

    private static int indexOf(ByteBuffer b, int from, byte[] pattern) {
        int last = b.limit() - pattern.length;
        outer:
        for (int i = from; i <= last; i++) {
            for (int j = 0; j < pattern.length; j++) {
                if (b.get(i + j) != pattern[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private static boolean regionEquals(ByteBuffer b, int at, String s) {
        for (int i = 0; i < s.length(); i++) {
            if (b.get(at + i) != s.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    private static boolean regionEqualsIgnoreCase(ByteBuffer b, int at, String lower) {
        for (int i = 0; i < lower.length(); i++) {
            if (Character.toLowerCase((char) b.get(at + i)) != lower.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    private static void closeQuietly(SelectionKey key) {
        key.cancel();
        try {
            key.channel().close();
        } catch (IOException ignored) {
            // Already closed by the peer; nothing left to release.
        }
    }
}

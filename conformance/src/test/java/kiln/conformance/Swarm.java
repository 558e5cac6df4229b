package kiln.conformance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * Many hostile client connections driven by one selector thread: thousands of sockets that each
 * send a scripted request (a head, part of a body, a trickle of bytes, junk), then wait without
 * sending more; what the server does with each (its status line, when it closed) is recorded. The
 * attacker of {@link HostileClientsTest} and {@link HostileBench}.
 *
 * <p>Connections come from many source addresses in 127.0.0.0/8 (127.0.1.1, 127.0.1.2, ...; on
 * Linux every one of them is this machine's), {@link Script#perAddress} each, so that an attack
 * can be spread over many "clients" or come from one. A connection that does not read
 * ({@link Script#reads} false) has a small receive buffer, so that what the server sends it fills
 * the server's socket buffers soon.
 */
final class Swarm implements AutoCloseable {
    /** What every connection of one {@link #start} does. */
    static final class Script {
        /** Sent at once after connecting. */
        byte[] first = new byte[0];
        /** Then sent one byte at a time, one every {@link #trickleMs} ms. */
        byte[] trickle = new byte[0];
        long trickleMs;
        /** Then sent repeatedly, once every {@link #repeatMs} ms, while the connection is open, up to {@link #repeatBytes} bytes in all. */
        byte[] repeat = new byte[0];
        long repeatMs;
        long repeatBytes;
        /** Whether the connection reads what the server sends (to learn its status and its close). */
        boolean reads = true;
        /** Connections per source address. */
        int perAddress = 1;
        /** The first source address is 127.0.1.{@code firstAddress}, counting on into 127.0.2.x... */
        int firstAddress = 1;

        static Script sending(String first) {
            Script s = new Script();
            s.first = first.getBytes(StandardCharsets.ISO_8859_1);
            return s;
        }
    }

    /** One connection's fate. */
    static final class Conn {
        final int index;
        SocketChannel channel;
        final Script script;
        volatile long connectedAt;
        /** When this connection last sent a byte (nanoTime). */
        volatile long lastSentAt;
        /** When the server closed or reset it (nanoTime), 0 while open. */
        volatile long closedAt;
        /** The status of the first response, 0 for none yet. */
        volatile int status;
        /** The first bytes received, for the status line. */
        final StringBuilder head = new StringBuilder();
        long received;
        int trickled;
        long repeated;
        ByteBuffer pending;
        boolean refusedConnect;

        Conn(int index, Script script) {
            this.index = index;
            this.script = script;
        }
    }

    private final InetSocketAddress server;
    private final Selector selector;
    private final Thread thread;
    private final List<Conn> conns = new ArrayList<>();
    private final ConcurrentLinkedQueue<Conn> toOpen = new ConcurrentLinkedQueue<>();
    /** Work for the selector thread from other threads ({@link #drainUnread}). */
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    /** Timers: (due nanoTime, connection). */
    private final PriorityQueue<long[]> timers = new PriorityQueue<>((a, b) -> Long.compare(a[0], b[0]));
    private volatile boolean stopping;
    private final ByteBuffer readBuffer = ByteBuffer.allocateDirect(64 * 1024);

    /** @param port the server's port on 127.0.0.1 */
    Swarm(int port) {
        this.server = new InetSocketAddress(ServerProcess.BIND, port);
        try {
            this.selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.thread = new Thread(this::loop, "swarm");
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Opens {@code n} connections that each run {@code script}; returns at once (they connect as
     * the selector thread gets to them).
     *
     * @return their records, filled in as they go (read them after {@link #settle} or while running: fields are racy but monotonic)
     */
    synchronized List<Conn> start(int n, Script script) {
        List<Conn> started = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Conn c = new Conn(conns.size(), script);
            conns.add(c);
            started.add(c);
            toOpen.add(c);
        }
        selector.wakeup();
        return started;
    }

    /** @return the source address of the {@code i}-th connection of a script (127.0.1.1 on) */
    static InetAddress sourceAddress(Script s, int i) {
        int a = s.firstAddress + i / Math.max(1, s.perAddress);
        try {
            return InetAddress.getByAddress(new byte[] {127, (byte) (1 + a / 250), (byte) (1 + a % 250), 1});
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    private void loop() {
        while (!stopping) {
            try {
                for (Runnable t; (t = tasks.poll()) != null; ) t.run();
                openQueued();
                long wait = runTimers();
                selector.select(Math.max(1, Math.min(wait, 50)));
                for (SelectionKey k : selector.selectedKeys()) handle(k);
                selector.selectedKeys().clear();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (RuntimeException e) {
                e.printStackTrace();
            }
        }
    }

    private void openQueued() {
        Conn c;
        int opened = 0;
        // a few hundred per turn, so the selector keeps serving the others while thousands connect
        while (opened++ < 500 && (c = toOpen.poll()) != null) {
            try {
                SocketChannel ch = SocketChannel.open();
                ch.configureBlocking(false);
                if (!c.script.reads) ch.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
                int ordinal = c.index - indexOfFirst(c.script);
                ch.bind(new InetSocketAddress(sourceAddress(c.script, ordinal), 0));
                c.channel = ch;
                if (ch.connect(server)) {
                    connected(c);
                } else {
                    ch.register(selector, SelectionKey.OP_CONNECT, c);
                }
            } catch (IOException e) {
                c.refusedConnect = true;
                c.closedAt = System.nanoTime();
            }
        }
    }

    private final Map<Script, Integer> firstIndex = new java.util.IdentityHashMap<>();

    private synchronized int indexOfFirst(Script s) {
        return firstIndex.computeIfAbsent(s, k -> {
            for (Conn c : conns) {
                if (c.script == k) return c.index;
            }
            return 0;
        });
    }

    private void connected(Conn c) throws IOException {
        c.connectedAt = System.nanoTime();
        c.channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        int ops = c.script.reads ? SelectionKey.OP_READ : 0;
        SelectionKey key = c.channel.register(selector, ops, c);
        send(c, key, c.script.first);
        if (c.script.trickle.length > 0) timer(c, c.script.trickleMs);
        if (c.script.repeat.length > 0) timer(c, c.script.repeatMs);
    }

    private void timer(Conn c, long ms) {
        timers.add(new long[] {System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms), c.index});
    }

    /** @return ms until the next timer */
    private long runTimers() {
        long now = System.nanoTime();
        while (!timers.isEmpty() && timers.peek()[0] <= now) {
            Conn c = conns.get((int) timers.poll()[1]);
            if (c.closedAt != 0 || c.channel == null) continue;
            SelectionKey key = c.channel.keyFor(selector);
            if (key == null || !key.isValid()) continue;
            Script s = c.script;
            if (c.trickled < s.trickle.length) {
                send(c, key, new byte[] {s.trickle[c.trickled++]});
                if (c.trickled < s.trickle.length) timer(c, s.trickleMs);
                else if (s.repeat.length > 0) timer(c, s.repeatMs);
            } else if (s.repeat.length > 0 && c.repeated < s.repeatBytes) {
                send(c, key, s.repeat);
                c.repeated += s.repeat.length;
                if (c.repeated < s.repeatBytes) timer(c, s.repeatMs);
            }
        }
        return timers.isEmpty() ? 50 : Math.max(1, TimeUnit.NANOSECONDS.toMillis(timers.peek()[0] - now));
    }

    /** Writes what it can now; the rest waits for the socket to be writable (a server that does not read holds it). */
    private void send(Conn c, SelectionKey key, byte[] bytes) {
        if (bytes.length == 0) return;
        if (c.pending != null && c.pending.hasRemaining()) {
            ByteBuffer more = ByteBuffer.allocate(c.pending.remaining() + bytes.length);
            more.put(c.pending).put(bytes).flip();
            c.pending = more;
        } else {
            c.pending = ByteBuffer.wrap(bytes);
        }
        flush(c, key);
    }

    private void flush(Conn c, SelectionKey key) {
        try {
            int n = c.channel.write(c.pending);
            if (n > 0) c.lastSentAt = System.nanoTime();
            int ops = (c.script.reads ? SelectionKey.OP_READ : 0) | (c.pending.hasRemaining() ? SelectionKey.OP_WRITE : 0);
            if (key.isValid()) key.interestOps(ops);
        } catch (IOException e) {
            closed(c, key);
        }
    }

    private void handle(SelectionKey k) {
        Conn c = (Conn) k.attachment();
        try {
            if (k.isValid() && k.isConnectable()) {
                if (c.channel.finishConnect()) connected(c);
                return;
            }
            if (k.isValid() && k.isWritable()) flush(c, k);
            if (k.isValid() && k.isReadable()) read(c, k);
        } catch (IOException e) {
            if (c.connectedAt == 0) c.refusedConnect = true;
            closed(c, k);
        }
    }

    private void read(Conn c, SelectionKey k) {
        while (true) {
            readBuffer.clear();
            int n;
            try {
                n = c.channel.read(readBuffer);
            } catch (IOException e) {
                closed(c, k);
                return;
            }
            if (n < 0) {
                closed(c, k);
                return;
            }
            if (n == 0) return;
            c.received += n;
            readBuffer.flip();
            while (c.head.length() < 16 && readBuffer.hasRemaining()) c.head.append((char) (readBuffer.get() & 0xff));
            if (c.status == 0 && c.head.length() >= 12 && c.head.toString().startsWith("HTTP/1.")) {
                try {
                    c.status = Integer.parseInt(c.head.substring(9, 12));
                } catch (NumberFormatException e) {
                    c.status = -1;
                }
            }
        }
    }

    private void closed(Conn c, SelectionKey k) {
        if (c.closedAt == 0) c.closedAt = System.nanoTime();
        k.cancel();
        try {
            c.channel.close();
        } catch (IOException ignored) {
            // closing a socket that failed
        }
    }

    /**
     * For connections that do not read: on the selector thread, drains what each received and
     * notes which the server has closed (an end of stream, or a reset after its data); a connection
     * still open stays so. Returns once done.
     */
    void drainUnread(List<Conn> which) throws InterruptedException {
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        tasks.add(() -> {
            for (Conn c : which) {
                if (c.closedAt != 0 || c.channel == null || !c.channel.isOpen()) continue;
                SelectionKey k = c.channel.keyFor(selector);
                if (k != null) read(c, k);
            }
            done.countDown();
        });
        selector.wakeup();
        if (!done.await(10, TimeUnit.SECONDS)) throw new AssertionError("the swarm's selector thread did not drain in 10 s");
    }

    /** Waits until every one of {@code conns} connected or failed to, at most {@code ms}. */
    static void awaitConnected(List<Conn> conns, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (System.nanoTime() < deadline) {
            boolean all = true;
            for (Conn c : conns) {
                if (c.connectedAt == 0 && c.closedAt == 0) {
                    all = false;
                    break;
                }
            }
            if (all) return;
            Thread.sleep(20);
        }
    }

    /** Waits until every one of {@code conns} is closed by the server, at most {@code ms}; @return how many are still open */
    static int awaitClosed(List<Conn> conns, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (true) {
            int open = open(conns);
            if (open == 0 || System.nanoTime() >= deadline) return open;
            Thread.sleep(50);
        }
    }

    /** @return how many of {@code conns} are still open */
    static int open(List<Conn> conns) {
        int open = 0;
        for (Conn c : conns) {
            if (c.closedAt == 0) open++;
        }
        return open;
    }

    /** @return statuses received, e.g. {408=2400, 503=100, none=0} ("none": closed or open without an answer) */
    static Map<String, Integer> statuses(List<Conn> conns) {
        Map<String, Integer> m = new TreeMap<>();
        for (Conn c : conns) m.merge(c.refusedConnect ? "refused" : c.status == 0 ? "none" : Integer.toString(c.status), 1, Integer::sum);
        return m;
    }

    /** @return the longest time from a connection's last byte sent (or its connect) to its close, ms, over those closed */
    static long slowestCloseMs(List<Conn> conns) {
        long worst = 0;
        for (Conn c : conns) {
            if (c.closedAt == 0 || c.connectedAt == 0) continue;
            long from = Math.max(c.connectedAt, c.lastSentAt);
            worst = Math.max(worst, TimeUnit.NANOSECONDS.toMillis(c.closedAt - from));
        }
        return worst;
    }

    /** Stops the selector thread and closes every connection still open. */
    @Override
    public void close() {
        stopping = true;
        selector.wakeup();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (SelectionKey k : selector.keys()) {
            try {
                k.channel().close();
            } catch (IOException ignored) {
                // best effort
            }
        }
        try {
            selector.close();
        } catch (IOException ignored) {
            // best effort
        }
    }

    /** Closes the given connections now, from the caller's thread (the selector drops their keys). */
    static void closeAll(List<Conn> conns) {
        for (Conn c : conns) {
            if (c.channel == null) continue;
            try {
                c.channel.close();
            } catch (IOException ignored) {
                // best effort
            }
        }
    }
}

package kiln.kilim;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP relay on the loopback to a server, holding every byte the server sends for a set delay
 * ({@link #delay}): a database a long network away. A round trip made on a fiber's carrier thread
 * then holds the carrier at least that long, long enough for the blocked-carrier checker to see it, where on
 * the loopback it would be over in a fraction of a millisecond. The bytes keep their order; the
 * client's bytes go through at once.
 */
final class SlowLink implements AutoCloseable {
    private static final byte[] END = new byte[0];

    /** Bytes the server sent, and when they are due at the client (System.nanoTime()). */
    private record Chunk(long due, byte[] bytes) {
    }

    private final ServerSocket listener;
    private final int target;
    private volatile long delayNanos;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();

    /** @param target the port of the server on the loopback */
    SlowLink(int target) throws IOException {
        this.target = target;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        daemon("slow-link-accept", this::accept);
    }

    /** @return the port to connect to instead of the server's */
    int port() {
        return listener.getLocalPort();
    }

    /** Holds what the server sends from now on for {@code delay} (zero: passes it on at once). */
    void delay(Duration delay) {
        delayNanos = delay.toNanos();
    }

    private void accept() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(InetAddress.getLoopbackAddress(), target);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                daemon("slow-link-up", () -> copy(client, server));
                BlockingQueue<Chunk> held = new LinkedBlockingQueue<>();
                daemon("slow-link-down", () -> hold(server, held));
                daemon("slow-link-down-due", () -> release(held, client));
            } catch (IOException e) {
                if (!listener.isClosed()) throw new java.io.UncheckedIOException(e);
            }
        }
    }

    /** Client to server, at once. */
    private static void copy(Socket from, Socket to) {
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            byte[] b = new byte[16384];
            for (int n; (n = in.read(b)) >= 0; ) out.write(b, 0, n);
        } catch (IOException closed) {
            // either side closed: the other follows
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    /** Server to the queue, each read with the time it is due. */
    private void hold(Socket from, BlockingQueue<Chunk> held) {
        try (InputStream in = from.getInputStream()) {
            byte[] b = new byte[16384];
            for (int n; (n = in.read(b)) >= 0; ) held.add(new Chunk(System.nanoTime() + delayNanos, Arrays.copyOf(b, n)));
        } catch (IOException closed) {
            // the end below
        }
        held.add(new Chunk(System.nanoTime() + delayNanos, END));
    }

    /** The queue to the client, each read when it is due. */
    private static void release(BlockingQueue<Chunk> held, Socket to) {
        try (OutputStream out = to.getOutputStream()) {
            while (true) {
                Chunk chunk = held.take();
                for (long wait; (wait = chunk.due - System.nanoTime()) > 0; ) LockSupport.parkNanos(wait);
                if (chunk.bytes == END) break;
                out.write(chunk.bytes);
            }
        } catch (IOException | InterruptedException closed) {
            // the client went away
        } finally {
            closeQuietly(to);
        }
    }

    private static void daemon(String name, Runnable run) {
        Thread t = new Thread(run, name);
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        for (Socket s : sockets) closeQuietly(s);
    }
}

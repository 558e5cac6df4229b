package kiln.kilim;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channel;
import java.nio.channels.ServerSocketChannel;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.IoEvent;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoRegistration;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandle;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollIoOps;
import io.netty.channel.unix.Buffer;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.NativeInetAddress;
import io.netty.channel.unix.Socket;
import io.netty.util.concurrent.ThreadAwareExecutor;
import kiln.http.spi.Connection;
import kiln.server.Connections;

/**
 * A {@link Poller} on Linux's epoll through Netty's {@link EpollIoHandler} (its public 4.2 API for
 * polling descriptors on a loop of one's own) and its JNI calls. The JDK binds the listening socket
 * (and closes it); the connections are bare descriptors ({@link NativeSocket}), accepted, read,
 * written, half-closed and closed by Netty's calls, with no JDK {@code SocketChannel} at all. What
 * that saves, measured: per request, the JDK selector's map from descriptor to key (an
 * {@code Integer} and a {@code HashMap} probe per report, a cache miss at 19,500 connections), its
 * update queue, and the two {@code ReentrantLock}s and the begin/end of every channel read and
 * write; per connection, the channel's objects and its addresses (about 460 bytes).
 *
 * <p>Interest, as on NIO: level-triggered, for input ({@code EPOLLIN}) while a connection is idle
 * and while its fiber serves it, so a request served at once costs no {@code epoll_ctl}; what
 * waits ({@link Poller.Ready}: a paused fiber, a parked stream) is disarmed when it is reported and
 * armed again by its next wait. Not one-shot: a report the kernel made but the loop did not get to
 * (a hand-off ends the loop in the middle of a poll's reports) is made again to the next poll.
 *
 * <p>Needs the JDK's {@code sun.nio.ch} exported to kiln (kiln's jars say so in their manifests,
 * deploy/jvm.options on the command line), for the listening socket's descriptor, and Netty's
 * native library for the machine ({@link #unavailability}).
 */
final class EpollPoller extends Poller {
    private static final Logger LOG = Logger.getLogger(EpollPoller.class.getName());
    /** Linux's {@code EPOLLONESHOT}: Netty names no constant for it. */
    private static final int EPOLLONESHOT = 1 << 30;
    private static final EpollIoOps READABLE = EpollIoOps.EPOLLIN;
    private static final EpollIoOps WRITABLE = EpollIoOps.EPOLLOUT;
    /**
     * No event: one-shot with none asked for, so that even a hang-up (which epoll reports whatever
     * was asked) is reported at most once until the socket is armed again.
     */
    private static final EpollIoOps DISARMED = EpollIoOps.valueOf(EPOLLONESHOT);
    /** Events per poll, as the JDK's selector. */
    private static final int MAX_EVENTS = 1024;
    /** {@code sun.nio.ch.SelChImpl.getFDVal()}: a JDK channel's descriptor; null when the package is not exported to kiln. */
    private static final MethodHandle FD_VAL = descriptorGetter();

    /** The most a thread that was handed off reads or writes at once, through a direct buffer of its own ({@link #readElsewhere}). */
    private static final int ELSEWHERE_BYTES = 64 * 1024;

    private final IoHandler handler;
    /** Carrier 0's: the listening socket's descriptor (the JDK's channel owns it), and its key; null on the others. */
    private final Socket listening;
    private final Key acceptKey;
    /** Where an accept leaves the client's address: its length, then the address (Netty's layout); the poller's thread only. */
    private final byte[] acceptedAddress = new byte[26];
    /**
     * The last client's address, shared by the connections from it that follow: behind a proxy
     * (nginx) every connection comes from one address, held once rather than per connection.
     */
    private InetAddress lastClient;
    /** The keys registered here, by descriptor, for {@link #closeIdleAndPoll}; the poller's thread only. */
    private Key[] keys = new Key[1024];
    /** What other threads left for this poller's thread (Netty's cancellations); run by {@link #runTasks}. */
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Context context = new Context();
    /** Whether {@link #poll} found the listening socket ready this time: {@link #LISTENER_READY} or 0; the owner's only. */
    private int polled;

    /** @throws IOException when epoll cannot be set up, or the listening socket not registered */
    EpollPoller(Serve serve, Connections connections, Carriers carriers, int index, ServerSocketChannel listener) throws IOException {
        super(serve, connections, carriers, index, listener);
        ThreadAwareExecutor executor = new ThreadAwareExecutor() {
            @Override
            public boolean isExecutorThread(Thread t) {
                return carriers.thread(index) == t;
            }

            @Override
            public void execute(Runnable task) {
                tasks.add(task);
                wakeup();
            }
        };
        handler = EpollIoHandler.newFactory(MAX_EVENTS, DefaultSelectStrategyFactory.INSTANCE).newHandler(executor);
        handler.initialize();
        listening = listener == null ? null : new Socket(descriptor(listener));
        acceptKey = listening == null ? null : new Key(listening, null);
        if (acceptKey != null) {
            acceptKey.registerWith(handler);
            acceptKey.arm(READABLE);
        }
        becomeLoop(handler::wakeup);
    }

    /**
     * @return why this transport cannot run here (Netty's native library missing for this machine, or
     *         {@code sun.nio.ch} not exported to kiln), or null when it can
     */
    static String unavailability() {
        if (!Epoll.isAvailable()) return "Netty's epoll is unavailable here: " + Epoll.unavailabilityCause();
        if (FD_VAL == null) return "the JDK's sun.nio.ch is not exported to kiln (--add-exports java.base/sun.nio.ch=ALL-UNNAMED)";
        return null;
    }

    private static MethodHandle descriptorGetter() {
        try {
            return MethodHandles.lookup().findVirtual(Class.forName("sun.nio.ch.SelChImpl"), "getFDVal", MethodType.methodType(int.class));
        } catch (ReflectiveOperationException | IllegalAccessError | SecurityException e) {
            return null;
        }
    }

    /** @return the descriptor of one of the JDK's socket channels */
    static int descriptor(Channel ch) throws IOException {
        try {
            return (int) FD_VAL.invoke(ch);
        } catch (Throwable e) {
            throw new IOException("reading the descriptor of " + ch, e);
        }
    }

    /**
     * A socket polled here: its descriptor (a connection's {@link NativeSocket}, or the listening
     * socket's), its registration with the handler, what it is armed for, and what to start or resume.
     */
    final class Key implements EpollIoHandle {
        private final Socket fd;
        private IoRegistration registration;
        private volatile Object attachment;
        /** What the socket is armed for now: one of the {@code EpollIoOps} above. */
        private volatile EpollIoOps armed;

        /** @param connection what the socket serves, null for the listening socket */
        Key(Socket fd, Connection connection) {
            this.fd = fd;
            this.attachment = connection;
        }

        void registerWith(IoHandler h) throws IOException {
            try {
                registration = h.register(this);
            } catch (IOException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException("registering with epoll", e);
            }
        }

        /** @return false when the registration is cancelled (or arming failed: the socket is gone) */
        boolean arm(EpollIoOps ops) {
            if (armed == ops) return registration.isValid();
            armed = ops;
            try {
                return registration.submit(ops) >= 0;
            } catch (Exception e) {
                LOG.log(Level.FINE, "epoll_ctl", e);
                return false;
            }
        }

        @Override
        public FileDescriptor fd() {
            return fd;
        }

        /** On the poller's thread, from {@link IoHandler#run}: the socket is ready. */
        @Override
        public void handle(IoRegistration r, IoEvent event) {
            if (this == acceptKey) {
                polled = LISTENER_READY;
            } else if (armed != DISARMED && !ready(this, attachment)) {
                throw HandedOff.INSTANCE;  // leave the handler's reports to the new owner
            }
        }

        @Override
        public void close() {
            // the connection's NativeSocket (closeSocket) or the JDK's listening channel closes the descriptor
        }
    }

    @Override
    void attach(Object key, Object attachment) {
        ((Key) key).attachment = attachment;
    }

    @Override
    boolean await(Object key, int op, Object attachment) {
        Key k = (Key) key;
        k.attachment = attachment;
        return k.arm(op == WRITE ? WRITABLE : READABLE);  // no wakeup: epoll_ctl applies at once
    }

    @Override
    void wakeupPoll() {
        handler.wakeup();
    }

    /*
     * recv(2) and send(2), as nginx reads, not read(2) and write(2): a read or write of a socket
     * goes through the file layer first (the position lock's check, rw_verify_area, the security
     * hook, fsnotify), 0.3 µs a request at c=19,500 in perf's profile.
     */
    @Override
    int readDirect(Object key, ByteBuffer d) throws IOException {
        int n = ((Key) key).fd.recvAddress(Buffer.memoryAddress(d), d.position(), d.limit());
        if (n > 0) d.position(d.position() + n);
        return n;
    }

    @Override
    int writeDirect(Object key, ByteBuffer d) throws IOException {
        int n = ((Key) key).fd.sendAddress(Buffer.memoryAddress(d), d.position(), d.limit());
        d.position(d.position() + n);
        return n;
    }

    /** Through a direct buffer of the call's own: the thread no longer owns the poller's (rare: a fiber that held its carrier too long). */
    @Override
    int readElsewhere(Object key, ByteBuffer dst) throws IOException {
        ByteBuffer d = ByteBuffer.allocateDirect(Math.min(dst.remaining(), ELSEWHERE_BYTES));  // dst has room: read checked
        int n = readDirect(key, d);
        if (n > 0) dst.put(d.flip());
        return n;
    }

    /**
     * In pieces the size of a direct buffer, until the socket takes less than a piece: the poller's
     * own on its thread (a response larger than it), else one of the call's own.
     */
    @Override
    int writeElsewhere(Object key, ByteBuffer src) throws IOException {
        ByteBuffer d = onOwnThread() ? scratch() : ByteBuffer.allocateDirect(Math.max(1, Math.min(src.remaining(), ELSEWHERE_BYTES)));
        int written = 0;
        while (src.hasRemaining()) {
            int start = src.position();
            int piece = Math.min(src.remaining(), d.capacity());
            d.clear();
            d.put(src.slice(start, piece)).flip();
            int n = writeDirect(key, d);
            src.position(start + n);
            written += n;
            if (n < piece) break;
        }
        return written;
    }

    /** Netty's {@code accept4}: the new socket is non-blocking already. */
    @Override
    boolean acceptOne() throws IOException {
        int fd = listening.accept(acceptedAddress);
        if (fd < 0) return false;
        NativeSocket socket = new NativeSocket(fd);
        InetSocketAddress client;
        try {
            socket.setTcpNoDelay(true);
            client = NativeInetAddress.address(acceptedAddress, 1, acceptedAddress[0]);
            if (client.getAddress().equals(lastClient)) {
                client = new InetSocketAddress(lastClient, client.getPort());
            } else {
                lastClient = client.getAddress();
            }
        } catch (IOException | RuntimeException e) {  // reset before it was accepted, most likely
            connections.acceptFailed(e instanceof IOException io ? io : new IOException(e));
            Connections.closeQuietly(socket);
            return true;
        }
        byte[] refusal = connections.admit(client);
        if (refusal == null) {
            deal(socket, client);
        } else {
            refuse(socket, refusal);
        }
        return true;
    }

    /** Writes a refusal once, without waiting (it may be cut short), through the poller's direct buffer, and closes the socket. */
    private void refuse(NativeSocket socket, byte[] response) {
        ByteBuffer d = scratch();
        d.clear();
        d.put(response, 0, Math.min(response.length, d.capacity())).flip();
        try {
            socket.sendAddress(Buffer.memoryAddress(d), d.position(), d.limit());
        } catch (IOException ignored) {
            // best effort: the client may already be gone
        }
        Connections.closeQuietly(socket);
    }

    @Override
    void runTasks() {
        for (Runnable t; (t = tasks.poll()) != null;) t.run();
    }

    /**
     * Polls through the handler, which calls {@link Key#handle} for each socket reported. When a
     * fiber run there held this thread so long that the carrier was handed off, the key throws
     * {@link HandedOff} (an {@code Error}, which the handler lets through, unlike an exception,
     * which it logs and sleeps a second on), so this thread leaves the handler's reports at once
     * and touches nothing more of it; the new owner polls again.
     */
    @Override
    int poll(long sleepMs) {
        polled = 0;
        context.deadline = sleepMs <= 0 ? -1 : System.nanoTime() + sleepMs * 1_000_000;
        context.sleeps = sleepMs != 0;
        try {
            handler.run(context);
        } catch (HandedOff e) {
            return -1;  // the carrier is the new thread's, its sleeping flag too
        }
        carriers.awake(index);  // after the fibers ran: meanwhile the handler's wakeup did nothing, as it was awake
        return polled;
    }

    /** Thrown through the handler when the carrier was handed off while a fiber ran in it ({@link #poll}). */
    private static final class HandedOff extends Error {
        static final HandedOff INSTANCE = new HandedOff();

        private HandedOff() {
            super("the carrier was handed off", null, false, false);
        }
    }

    /** What the handler asks before it blocks: whether it may, and until when. */
    private final class Context implements IoHandlerContext {
        /** Whether the loop said the poll may block at all ({@code sleepMs} not 0). */
        boolean sleeps;
        /** System.nanoTime() to block until, or -1 for until woken. */
        long deadline;

        /** Asked again after the handler announced that it blocks: work that came since must not wait (the wakeup may have found it awake). */
        @Override
        public boolean canBlock() {
            return sleeps && tasks.isEmpty() && mayBlock();
        }

        @Override
        public long delayNanos(long now) {
            return deadline < 0 ? Long.MAX_VALUE : Math.max(0, deadline - now);
        }

        @Override
        public long deadlineNanos() {
            return deadline;
        }

        /**
         * Asked once a run, as the handler's wait returns and before it hands out the reports (Netty
         * times its I/O when this says so): the moment the loop reads its clock. Says no.
         */
        @Override
        public boolean shouldReportActiveIoTime() {
            carriers.readClock();
            return false;
        }
    }

    @Override
    boolean clearInterest(Object key) {
        Key k = (Key) key;
        return k.armed == DISARMED || k.arm(DISARMED);
    }

    /**
     * Closes the socket, then cancels its registration: closing the descriptor takes it out of the
     * epoll set, and the registration's cancel, seeing it closed, only forgets it (no
     * {@code epoll_ctl(DEL)}, which once the number is free could reach a new connection's socket).
     */
    @Override
    void close(Object key, Connection c) {
        Key k = (Key) key;
        if (k != null) k.armed = DISARMED;
        closeSocket(c);
        if (k != null) {
            try {
                k.registration.cancel();
            } catch (Exception e) {
                LOG.log(Level.FINE, "cancelling a registration", e);
            }
            forget(k);
        }
    }

    @Override
    void acceptInterest(boolean on) {
        acceptKey.arm(on ? READABLE : DISARMED);
    }

    @Override
    void register(Connection c) {
        Key k;
        try {
            k = new Key((NativeSocket) c.socket(), c);
            k.registerWith(handler);
        } catch (IOException e) {
            LOG.log(Level.FINE, "registering a connection", e);
            closeSocket(c);
            return;
        }
        int fd = k.fd.intValue();
        if (fd >= keys.length) keys = Arrays.copyOf(keys, Math.max(fd + 1, 2 * keys.length));
        keys[fd] = k;
        if (!k.arm(READABLE)) close(k, c);
    }

    /** Drops {@code k} from {@link #keys}, on the poller's thread. */
    private void forget(Key k) {
        if (!onOwnThread()) {
            tasks.add(() -> forget(k));
            wakeup();
            return;
        }
        int fd = k.fd.intValue();
        if (fd < keys.length && keys[fd] == k) keys[fd] = null;
    }

    @Override
    void closeIdleAndPoll() {
        runTasks();
        for (Key k : keys) {
            if (k != null && k.armed == READABLE && k.attachment instanceof Connection c) close(k, c);
        }
        handler.prepareToDestroy();
        handler.destroy();
    }
}

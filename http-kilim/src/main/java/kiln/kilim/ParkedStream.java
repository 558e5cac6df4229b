package kiln.kilim;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.channels.SelectionKey;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

import kiln.http.BodyStream;
import kiln.http.Connection;

/**
 * A streamed body between two parts, waiting without a fiber: what a server-sent event subscriber
 * is while nothing happens. As an idle keep-alive connection is only its socket and a
 * {@link Connection}, a waiting stream is only those plus this object, registered on the body's
 * future: no paused fiber, no frames, no timer. Whichever comes first of the future completing, the
 * heartbeat falling due (the reaper checks once a second, {@link Connection#streamHeartbeatDue})
 * or the server stopping claims it and starts a new {@link ConnectionFiber} that goes on with the
 * stream.
 *
 * <p>When the stream ends, the fiber {@link #end}s it: a registration on a future that completes
 * later (a change feed's shared one) then holds only this emptied shell.
 */
final class ParkedStream implements BiConsumer<Object, Throwable>, Runnable {
    private static final VarHandle PARKED;

    static {
        try {
            PARKED = MethodHandles.lookup().findVarHandle(ParkedStream.class, "parked", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private KilimServer server;
    private Poller poller;
    private SelectionKey key;
    Connection connection;
    BodyStream body;
    /** The route's name, e.g. {@code GET /updates/events}, for the log. */
    final String name;
    /** The future last registered on: the body's wait. */
    CompletableFuture<?> armed;
    /** System.nanoTime() of the last part or heartbeat written. */
    long lastSent;
    /** True while no fiber runs the stream; the waker that sets it false starts one. */
    @SuppressWarnings("unused") private volatile boolean parked;

    ParkedStream(KilimServer server, Poller poller, SelectionKey key, Connection connection, BodyStream body, String name) {
        this.server = server;
        this.poller = poller;
        this.key = key;
        this.connection = connection;
        this.body = body;
        this.name = name;
        this.lastSent = System.nanoTime();
    }

    /**
     * Called by the fiber that runs the stream, as its last act: waits for {@code next} (registered
     * once per future), the heartbeat or a stop, without the fiber.
     *
     * @return true when parked: the fiber must end without touching the connection; false when
     *         what it would wait for has happened already: go on in the same fiber
     */
    boolean park(CompletableFuture<?> next, long heartbeatAt) {
        if (armed != next) {
            armed = next;
            next.whenComplete(this);
        }
        connection.streamHeartbeatAt(heartbeatAt);
        parked = true;
        if (next.isDone() || connection.streamStopped() || System.nanoTime() - heartbeatAt >= 0) {
            return !PARKED.compareAndSet(this, true, false);  // a waker that claimed it first starts the fiber
        }
        return true;
    }

    /** The body's future completed: {@link #run()}. */
    @Override
    public void accept(Object result, Throwable failure) {
        run();
    }

    /** Wakes the stream (its future, the heartbeat, a stop): the first waker starts a fiber to go on with it. */
    @Override
    public void run() {
        if (!PARKED.compareAndSet(this, true, false)) return;
        ConnectionFiber fiber = new ConnectionFiber(server, poller, key, connection, this);
        fiber.setScheduler(server.carriers());
        fiber.start();
    }

    /** The stream ended: drops everything but this shell, which a future's registration may still hold. */
    void end() {
        server = null;
        poller = null;
        key = null;
        connection = null;
        body = null;
        armed = null;
    }
}

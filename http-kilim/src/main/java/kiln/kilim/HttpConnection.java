package kiln.kilim;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.logging.Level;
import java.util.logging.Logger;

import kilim.Pausable;
import kilim.Task;
import kilim.nio.EndPoint;

/**
 * One client connection, served by one fiber for its whole life: read bytes, parse every complete
 * request in them, run each request's handler in turn (so pipelined requests are answered in
 * order), write the responses, read again. Reads and writes pause the fiber, not the carrier thread.
 *
 * <p>Buffers start small (1 KiB in, 1 KiB out) because a keep-alive sweep holds tens of thousands
 * of mostly idle connections; they grow only for large requests or responses.
 */
final class HttpConnection extends Task<Object> {
    private static final Logger LOG = Logger.getLogger(HttpConnection.class.getName());
    private static final int INITIAL_BUFFER = 1024;
    /** Largest request the parser's limits allow, plus chunk framing; more means the parser already refused it. */
    private static final int MAX_INPUT = RequestParser.MAX_REQUEST_LINE + RequestParser.MAX_HEADER_BYTES + 2 * RequestParser.MAX_BODY;
    /** Flush pipelined responses once this many bytes are waiting. */
    private static final int FLUSH_AT = 64 * 1024;

    private final KilimServer server;
    private final EndPoint endpoint;

    HttpConnection(KilimServer server, EndPoint endpoint) {
        this.server = server;
        this.endpoint = endpoint;
    }

    @Override
    public void execute() throws Pausable {
        ByteBuffer in = ByteBuffer.allocate(INITIAL_BUFFER);
        Output out = new Output(INITIAL_BUFFER);
        try {
            serve(in, out);
        } catch (EOFException e) {
            // the client closed the connection: the normal end of a keep-alive session
        } catch (IOException e) {
            LOG.log(Level.FINE, "connection error", e);
        } finally {
            try {
                endpoint.sockch.close();
            } catch (IOException ignored) {
                // nothing left to do for a socket that cannot even close
            }
            server.connectionClosed();
        }
    }

    private void serve(ByteBuffer in, Output out) throws Pausable, IOException {
        while (true) {
            int start = 0;
            boolean close = false;
            try {
                while (true) {
                    RequestParser.Parsed p = RequestParser.parse(in.array(), start, in.position());
                    if (p == null) break;
                    start += p.length;
                    HttpRequest request = p.request;
                    HttpResponse response = server.respond(request);
                    boolean keepAlive = request.keepAlive() && !server.isStopping();
                    ResponseWriter.write(out, request.minorVersion(), response, keepAlive, "HEAD".equals(request.method()));
                    if (!keepAlive) {
                        close = true;
                        break;
                    }
                    if (out.length() >= FLUSH_AT) flush(out);
                }
                if (!close && start == 0 && !in.hasRemaining() && in.capacity() >= MAX_INPUT) {
                    throw new HttpError(431, "request larger than " + MAX_INPUT + " bytes");
                }
            } catch (HttpError e) {
                // Answer what was already parsed, then the error, then close: after a framing error the
                // next request's start is unknown (RFC 9112 section 9.6 / 11.2).
                ResponseWriter.write(out, 1, HttpResponse.error(e.status, e.getMessage()), false, false);
                close = true;
            }
            if (out.length() > 0) flush(out);
            if (close) return;
            in = compact(in, start);
            in = endpoint.fill(in, 1);
        }
    }

    private void flush(Output out) throws Pausable, IOException {
        endpoint.write(out.toByteBuffer());
        out.clear(INITIAL_BUFFER);
    }

    /** Drops the consumed bytes; grows the buffer when a partial request fills it. */
    private static ByteBuffer compact(ByteBuffer in, int consumed) {
        if (consumed > 0) {
            int remaining = in.position() - consumed;
            System.arraycopy(in.array(), consumed, in.array(), 0, remaining);
            in.position(remaining);
            if (remaining == 0 && in.capacity() > INITIAL_BUFFER) return ByteBuffer.allocate(INITIAL_BUFFER);
        }
        if (!in.hasRemaining()) {
            ByteBuffer bigger = ByteBuffer.allocate(Math.min(MAX_INPUT, in.capacity() * 2));
            bigger.put(in.array(), 0, in.position());
            return bigger;
        }
        return in;
    }
}

package kiln.jetty;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.function.Consumer;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;

import kiln.http.Response;
import kiln.http.spi.ResponseWriter;
import kiln.server.ClientDeadlines;
import kiln.server.RequestContent;
import kiln.http.spi.MemoryBudget;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.util.Callback;

/**
 * A request's content and client address, for {@link kiln.server.AbstractRouter#begin}. Content
 * comes only with a Content-Length within {@code --max-content} ({@link Responses#refused} answered
 * every other request already: a chunked one 413), and is read without holding a thread (servlet
 * async I/O), into a {@link RequestContent}: it grows with what arrives, within the server's request
 * memory, at the minimum data rate; the blocking servlets read it so too before their thread runs.
 */
final class Content {
    static final byte[] NONE = new byte[0];
    /** Where a Jetty thread reads content that is ready: one buffer per thread, none per waiting request. */
    private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[8192]);

    private Content() {
    }

    /** The server's request memory and deadlines, which every request's content is read within. */
    record Limits(MemoryBudget memory, ClientDeadlines deadlines) {
    }

    /** @return the declared content length, 0 for none */
    static int length(HttpServletRequest request) {
        return (int) Math.max(0, request.getContentLengthLong());
    }

    /**
     * Reads the content without blocking (servlet async I/O, a {@link ReadListener}); the request
     * must be in async mode. {@code then} gets it once all of it is in, on Jetty's thread, with the
     * {@link RequestContent} to {@link RequestContent#release} once the handler answered. A request
     * refused meanwhile (503: no memory; 408: too slow) is answered and its connection closed here;
     * {@code failed} gets why the content was not read (that closing, the client leaving).
     */
    static void readAsync(HttpServletRequest request, Limits limits, java.util.function.BiConsumer<byte[], RequestContent> then,
                          Consumer<Throwable> failed) throws IOException {
        ServletInputStream in = request.getInputStream();
        RequestContent content = new RequestContent(limits.memory(), limits.deadlines(), length(request), reply -> refuse(request, reply));
        in.setReadListener(new ReadListener() {
            @Override
            public void onDataAvailable() throws IOException {
                byte[] chunk = SCRATCH.get();
                while (in.isReady()) {
                    int n = in.read(chunk);
                    if (n < 0 || !content.add(chunk, 0, n)) return;
                }
            }

            @Override
            public void onAllDataRead() {
                byte[] body = content.finish();
                if (body != null) then.accept(body, content);
            }

            @Override
            public void onError(Throwable failure) {
                content.release();
                failed.accept(failure);
            }
        });
    }

    /**
     * Answers {@code reply} and closes the connection, from any thread, outside the servlet's
     * response: its bytes go straight to the connection (as a library's own refusal would), then
     * the connection closes, which fails the request's reading.
     */
    static void refuse(HttpServletRequest request, Response reply) {
        EndPoint endPoint = endPoint(request);
        try {
            endPoint.write(Callback.from(endPoint::close), ByteBuffer.wrap(ResponseWriter.closing(reply.negotiated(request.getHeader("Accept")))));
        } catch (RuntimeException e) {
            endPoint.close();  // a write pending already (the 100 Continue): just close
        }
    }

    /** @return the connection of {@code request}, e.g. to close it from another thread */
    static EndPoint endPoint(HttpServletRequest request) {
        return ServletContextRequest.getServletContextRequest(request).getConnectionMetaData().getConnection().getEndPoint();
    }

    /** @return the client's address, or null when Jetty has none (not a network connection) */
    static InetSocketAddress remote(HttpServletRequest request) {
        SocketAddress address = ServletContextRequest.getServletContextRequest(request).getConnectionMetaData().getRemoteSocketAddress();
        return address instanceof InetSocketAddress inet ? inet : null;
    }
}

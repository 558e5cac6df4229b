package kiln.jetty;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.function.Consumer;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;

import org.eclipse.jetty.ee10.servlet.ServletContextRequest;

/**
 * A request's content and client address, for {@link kiln.server.AbstractRouter#begin}. Content
 * comes only with a Content-Length within {@code --max-content} ({@link Responses#refused} answered
 * every other request already: a chunked one 413), so at most that many bytes are read.
 */
final class Content {
    static final byte[] NONE = new byte[0];

    private Content() {
    }

    /** @return the declared content length, 0 for none */
    private static int length(HttpServletRequest request) {
        return (int) Math.max(0, request.getContentLengthLong());
    }

    /** Reads the content on the calling thread, which blocks until it is in (the blocking servlet's). */
    static byte[] readBlocking(HttpServletRequest request) throws IOException {
        int length = length(request);
        return length == 0 ? NONE : request.getInputStream().readNBytes(length);
    }

    /**
     * Reads the content without blocking (servlet async I/O, a {@link ReadListener}): {@code then}
     * gets it once all of it is in, on Jetty's thread (at once when there is none); {@code failed} gets
     * why it could not be read (the client left, or the idle timeout passed).
     */
    static void readAsync(HttpServletRequest request, Consumer<byte[]> then, Consumer<Throwable> failed) throws IOException {
        int length = length(request);
        if (length == 0) {
            then.accept(NONE);
            return;
        }
        ServletInputStream in = request.getInputStream();
        ByteArrayOutputStream content = new ByteArrayOutputStream(length);
        byte[] chunk = new byte[Math.min(length, 8192)];
        in.setReadListener(new ReadListener() {
            @Override
            public void onDataAvailable() throws IOException {
                while (in.isReady()) {
                    int n = in.read(chunk);
                    if (n < 0) return;
                    content.write(chunk, 0, n);
                }
            }

            @Override
            public void onAllDataRead() {
                then.accept(content.toByteArray());
            }

            @Override
            public void onError(Throwable failure) {
                failed.accept(failure);
            }
        });
    }

    /** @return the client's address, or null when Jetty has none (not a network connection) */
    static InetSocketAddress remote(HttpServletRequest request) {
        SocketAddress address = ServletContextRequest.getServletContextRequest(request).getConnectionMetaData().getRemoteSocketAddress();
        return address instanceof InetSocketAddress inet ? inet : null;
    }
}

package kiln.jetty;

import java.io.IOException;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;

import kiln.server.OpenStreams;
import kiln.server.WhenReadySink;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;

/**
 * A streamed body written with servlet async I/O (a {@link WriteListener}, {@link WhenReadySink}):
 * each part one non-blocking write and flush, so one chunk (Jetty chunks a body without
 * Content-Length on HTTP/1.1, and ends it with the connection on HTTP/1.0). A client that does not
 * read is cut at the minimum response rate's deadline ({@link kiln.server.OpenStreams}, {@link #cut});
 * one that leaves, or sends anything, ends the stream at once ({@link ClientWatch}).
 */
final class AsyncStream extends WhenReadySink {
    private final AsyncContext async;
    private final ServletOutputStream out;
    /** The client's watch, once the head went out; null before, or when there is none. */
    private volatile ClientWatch watch;

    AsyncStream(AsyncContext async) throws IOException {
        this.async = async;
        async.getResponse().setBufferSize(OpenStreams.RESPONSE_BUFFER_BYTES);
        this.out = async.getResponse().getOutputStream();
        out.setWriteListener(new WriteListener() {
            @Override
            public void onWritePossible() {
                AsyncStream.this.onWritePossible();
            }

            @Override
            public void onError(Throwable t) {
                AsyncStream.this.onError(t);
            }
        });
    }

    @Override
    protected boolean isReady() {
        return out.isReady();
    }

    @Override
    protected void writeNow(byte[] bytes, int length) throws IOException {
        out.write(bytes, 0, length);
    }

    @Override
    protected void flushNow() throws IOException {
        out.flush();
    }

    /** Closes the connection: the pending write fails, and the {@link WriteListener} says so. */
    @Override
    public void cut() {
        Content.endPoint((HttpServletRequest) async.getRequest()).close();
    }

    @Override
    public void watchClient(Runnable left) {
        watch = ClientWatch.start((HttpServletRequest) async.getRequest(), left);
    }

    @Override
    public void finish(boolean complete) {
        ClientWatch w = watch;
        if (w != null) w.stop();  // before the response completes
        if (complete) {
            async.complete();
            return;
        }
        // Close the connection without the last chunk: the client sees a cut body, not a complete one.
        // The abort completes the request too (Jetty dispatches it once more, and recycles it): an
        // AsyncContext.complete() after it could meet a recycled request and throw.
        ServletContextRequest.getServletContextRequest((HttpServletRequest) async.getRequest()).getServletChannel()
            .abort(new IOException("streamed body cut"));
    }
}

package kiln.comsat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;

import javax.servlet.ReadListener;
import javax.servlet.ServletInputStream;
import javax.servlet.ServletOutputStream;
import javax.servlet.WriteListener;

import kiln.server.WhenReadySink;
import org.eclipse.jetty.server.Request;

/**
 * Servlet async I/O for a request's fiber (Servlet 3.1 on Jetty 9.4): the content read by a
 * {@link ReadListener} into a future the fiber waits for ({@link FiberAwait}), and a streamed body
 * written through a {@link WriteListener} ({@link WhenReadySink}), so neither blocks a carrier
 * thread on a slow client. Only a Content-Length within {@code --max-content} gets this far
 * ({@code ComsatServer.Refusals}: a chunked request is 413).
 */
final class FiberContent {
    static final byte[] NONE = new byte[0];

    private FiberContent() {
    }

    /** @return a future of the request's content, complete at once when it has none; failed when the client leaves midway */
    static CompletableFuture<byte[]> read(Request request) throws IOException {
        int length = (int) Math.max(0, request.getContentLengthLong());
        if (length == 0) return CompletableFuture.completedFuture(NONE);
        CompletableFuture<byte[]> content = new CompletableFuture<>();
        ServletInputStream in = request.getInputStream();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(length);
        byte[] chunk = new byte[Math.min(length, 8192)];
        in.setReadListener(new ReadListener() {
            @Override
            public void onDataAvailable() throws IOException {
                while (in.isReady()) {
                    int n = in.read(chunk);
                    if (n < 0) return;
                    bytes.write(chunk, 0, n);
                }
            }

            @Override
            public void onAllDataRead() {
                content.complete(bytes.toByteArray());
            }

            @Override
            public void onError(Throwable failure) {
                content.completeExceptionally(failure);
            }
        });
        return content;
    }

    /** A streamed body on Jetty 9.4's servlet output, written when it is ready. */
    static final class Stream extends WhenReadySink {
        private final Request request;
        private final ServletOutputStream out;

        /** @param request Jetty's own request, in async mode (Comsat started it) */
        Stream(Request request) throws IOException {
            this.request = request;
            this.out = request.getResponse().getOutputStream();
            out.setWriteListener(new WriteListener() {
                @Override
                public void onWritePossible() {
                    Stream.this.onWritePossible();
                }

                @Override
                public void onError(Throwable t) {
                    Stream.this.onError(t);
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

        /** A complete body ends when the fiber returns (Comsat completes the request); a cut one closes the connection without the last chunk. */
        @Override
        public void finish(boolean complete) {
            if (!complete) request.getHttpChannel().abort(new IOException("streamed body cut"));
        }
    }
}

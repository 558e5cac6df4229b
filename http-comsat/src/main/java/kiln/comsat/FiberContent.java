package kiln.comsat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

import javax.servlet.ReadListener;
import javax.servlet.ServletInputStream;
import javax.servlet.ServletOutputStream;
import javax.servlet.WriteListener;

import kiln.http.Response;
import kiln.http.spi.MemoryBudget;
import kiln.http.spi.ResponseWriter;
import kiln.server.ClientDeadlines;
import kiln.server.OpenStreams;
import kiln.server.RequestContent;
import kiln.server.WhenReadySink;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.Callback;

/**
 * Servlet async I/O for a request's fiber (Servlet 3.1 on Jetty 9.4): the content read by a
 * {@link ReadListener} into a {@link RequestContent} (it grows with what arrives, within the server's
 * request memory, at the minimum data rate) and a future the fiber waits for ({@link FiberAwait}),
 * and a streamed body written through a {@link WriteListener} ({@link WhenReadySink}), so neither
 * blocks a carrier thread on a slow client. Only a Content-Length within {@code --max-content} gets
 * this far ({@code ComsatServer.Refusals}: a chunked request is 413).
 */
final class FiberContent {
    static final byte[] NONE = new byte[0];
    /** Where a Jetty thread reads content that is ready: one buffer per thread, none per waiting request. */
    private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[8192]);

    /** The server's request memory and deadlines, which every request's content is read within. */
    record Limits(MemoryBudget memory, ClientDeadlines deadlines) {
    }

    /** Completes with the content once all of it is in; exceptionally when it was refused (answered already) or the client left. */
    final CompletableFuture<byte[]> future = new CompletableFuture<>();
    /** Its memory, to release once the handler answered; null for a request without content. */
    private final RequestContent content;

    private FiberContent(RequestContent content) {
        this.content = content;
    }

    /** Gives the content's memory back: the handler answered, or the request ended without one. */
    void release() {
        if (content != null) content.release();
    }

    /** @return the request's content being read: its future completes at once when it has none */
    static FiberContent read(Request request, Limits limits) throws IOException {
        int length = (int) Math.max(0, request.getContentLengthLong());
        if (length == 0) {
            FiberContent none = new FiberContent(null);
            none.future.complete(NONE);
            return none;
        }
        ServletInputStream in = request.getInputStream();  // sends 100 Continue to a client that waits for it
        FiberContent reading = new FiberContent(new RequestContent(limits.memory(), limits.deadlines(), length, reply -> refuse(request, reply)));
        in.setReadListener(new ReadListener() {
            @Override
            public void onDataAvailable() throws IOException {
                byte[] chunk = SCRATCH.get();
                while (in.isReady()) {
                    int n = in.read(chunk);
                    if (n < 0) return;
                    if (!reading.content.add(chunk, 0, n)) {
                        reading.future.completeExceptionally(new IOException("request content refused"));
                        return;
                    }
                }
            }

            @Override
            public void onAllDataRead() {
                byte[] body = reading.content.finish();
                if (body != null) {
                    reading.future.complete(body);
                } else {
                    reading.future.completeExceptionally(new IOException("request content refused"));
                }
            }

            @Override
            public void onError(Throwable failure) {
                reading.future.completeExceptionally(failure);
            }
        });
        return reading;
    }

    /**
     * Answers {@code reply} and closes the connection, from any thread, outside the servlet's
     * response (the fiber answers nothing then): its bytes go straight to the connection.
     */
    private static void refuse(Request request, Response reply) {
        EndPoint endPoint = request.getHttpChannel().getEndPoint();
        try {
            endPoint.write(Callback.from(endPoint::close), ByteBuffer.wrap(ResponseWriter.closing(reply.negotiated(request.getHeader("Accept")))));
        } catch (RuntimeException e) {
            endPoint.close();  // a write pending already: just close
        }
    }

    /**
     * A streamed body on Jetty 9.4's servlet output, written when it is ready; a client that leaves,
     * or sends anything, ends it at once ({@link ClientWatch}).
     */
    static final class Stream extends WhenReadySink {
        private final Request request;
        private final ServletOutputStream out;
        /** The client's watch, once the head went out; null before, or when there is none. */
        private volatile ClientWatch watch;

        /** @param request Jetty's own request, in async mode (Comsat started it) */
        Stream(Request request) throws IOException {
            this.request = request;
            request.getResponse().setBufferSize(OpenStreams.RESPONSE_BUFFER_BYTES);
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

        /** Closes the connection: the pending write fails, and the {@link WriteListener} says so. */
        @Override
        public void cut() {
            request.getHttpChannel().getEndPoint().close();
        }

        @Override
        public void watchClient(Runnable left) {
            watch = ClientWatch.start(request, left);
        }

        /**
         * A complete body ends when the fiber returns (Comsat completes the request), so the watch
         * stops here, before; a cut one closes the connection without the last chunk.
         */
        @Override
        public void finish(boolean complete) {
            ClientWatch w = watch;
            if (w != null) w.stop();
            if (!complete) request.getHttpChannel().abort(new IOException("streamed body cut"));
        }
    }
}

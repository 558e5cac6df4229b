package kiln.bench.netty;

import java.nio.charset.StandardCharsets;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;

/**
 * One connection's requests, answered on its event loop as TechEmpower's Netty entry answers them:
 * each response is written as its request is decoded and the writes are flushed once, when the read
 * that brought them is done, so pipelined requests go out in one write. {@code GET /hello},
 * {@code /plaintext} and {@code /json} (exactly these URIs) get kiln's answers with kiln's heads
 * ({@link Heads}); any other request gets a 404 and the connection is closed, as in TechEmpower's
 * entry. Keep-alive follows RFC 9112 section 9.3 ({@link HttpUtil#isKeepAlive}), as kiln does.
 */
final class HelloHandler extends ChannelInboundHandlerAdapter {
    private final Heads heads;
    /** Set once a response says {@code Connection: close}: requests pipelined after it are dropped. */
    private boolean closing;

    HelloHandler(Heads heads) {
        this.heads = heads;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        // A GET's decoded request is followed by this empty last content: the fast path of TechEmpower's entry.
        if (msg == LastHttpContent.EMPTY_LAST_CONTENT) return;
        try {
            if (!closing && msg instanceof HttpRequest request) respond(ctx, request);
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void respond(ChannelHandlerContext ctx, HttpRequest request) {
        Heads.Framing framing = !HttpUtil.isKeepAlive(request) ? Heads.Framing.CLOSE
            : request.protocolVersion().isKeepAliveDefault() ? Heads.Framing.KEEP_ALIVE : Heads.Framing.KEEP_ALIVE_HTTP_1_0;
        if (request.method() != HttpMethod.GET) {
            notFound(ctx, request);
            return;
        }
        switch (request.uri()) {
            case "/hello" -> send(ctx, Heads.Body.HELLO, Unpooled.wrappedBuffer(Heads.Body.HELLO.bytes), framing);
            case "/plaintext" -> send(ctx, Heads.Body.PLAINTEXT, Unpooled.wrappedBuffer(Heads.Body.PLAINTEXT.bytes), framing);
            case "/json" -> send(ctx, Heads.Body.JSON, Unpooled.wrappedBuffer(Message.json()), framing);
            default -> notFound(ctx, request);
        }
    }

    private void send(ChannelHandlerContext ctx, Heads.Body body, ByteBuf content, Heads.Framing framing) {
        DefaultFullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, content,
            heads.head(body, framing), EmptyHttpHeaders.INSTANCE);
        if (framing == Heads.Framing.CLOSE) {
            closing = true;
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        } else {
            ctx.write(response, ctx.voidPromise());
        }
    }

    /** What kiln answers to an unknown path, with the connection closed after it (TechEmpower's entry closes too). */
    private void notFound(ChannelHandlerContext ctx, HttpRequest request) {
        byte[] text = ("404 Not Found: no such path: " + request.uri() + "\n").getBytes(StandardCharsets.UTF_8);
        HttpHeaders head = new DefaultHttpHeaders()
            .set(Heads.SERVER, Heads.KILN)
            .set(Heads.DATE, heads.date())
            .set(Heads.CONTENT_TYPE, Heads.Body.HELLO.contentType)
            .set(Heads.CONTENT_LENGTH, AsciiString.of(Integer.toString(text.length)))
            .set(Heads.CONNECTION, Heads.Framing.CLOSE.connection);
        closing = true;
        ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NOT_FOUND,
            Unpooled.wrappedBuffer(text), head, EmptyHttpHeaders.INSTANCE)).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.flush();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}

package kiln.bench.netty;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseEncoder;

/**
 * Netty's HTTP/1.1 response encoder with TechEmpower's two shortcuts: a {@link DefaultFullHttpResponse}
 * is accepted by its class alone, and a head built by {@link Heads} is copied from its bytes rather
 * than encoded header by header. Anything else is encoded as Netty does.
 */
final class HeadEncoder extends HttpResponseEncoder {
    @Override
    public boolean acceptOutboundMessage(Object msg) throws Exception {
        return msg.getClass() == DefaultFullHttpResponse.class || super.acceptOutboundMessage(msg);
    }

    @Override
    protected void encodeHeaders(HttpHeaders headers, ByteBuf buf) {
        if (headers instanceof Heads.Head head) {
            buf.writeBytes(head.encoded);
        } else {
            super.encodeHeaders(headers, buf);
        }
    }
}

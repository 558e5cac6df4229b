package kiln.jetty;

import java.nio.ByteBuffer;

import kiln.http.Response;
import kiln.server.AbstractRouter;
import kiln.server.StepRouter;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.Callback;

/**
 * Answers {@code OPTIONS *} (the asterisk-form, RFC 9112 section 3.2.4) as every front end does,
 * from the router ({@link kiln.http.spi.Routes#miss}: 200, {@code Allow}). Jetty's servlet
 * context is mapped at {@code /} and never sees the target {@code *}: without this, Jetty answers
 * its own 404. Jetty's parser refuses {@code *} with any other method (400) before it gets here.
 * Runs on the thread that parsed the request; the reply needs no wait.
 */
final class AsteriskOptions extends Handler.Wrapper {
    private final StepRouter router;

    AsteriskOptions(StepRouter router, Handler next) {
        super(next);
        this.router = router;
    }

    @Override
    public boolean handle(Request request, org.eclipse.jetty.server.Response response, Callback callback) throws Exception {
        if (!"*".equals(request.getHttpURI().getPath())) return super.handle(request, response, callback);
        java.net.SocketAddress remote = request.getConnectionMetaData().getRemoteSocketAddress();
        AbstractRouter.Exchange<?> exchange = router.begin(request.getMethod(), "*", null, Responses.headers(request.getHeaders()), new byte[0],
            remote instanceof java.net.InetSocketAddress a ? a : null);
        Response reply = exchange.respond(exchange.response());
        response.setStatus(reply.status);
        Responses.put(response.getHeaders(), reply);
        response.write(true, ByteBuffer.wrap(reply.body), callback);
        return true;
    }
}

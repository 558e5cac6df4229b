package kiln.jetty;

import java.nio.ByteBuffer;

import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.MetaData;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpStream;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.Callback;

/**
 * Drops the interim {@code 100 Continue} Jetty 12 sends to an HTTP/1.0 request that carries
 * {@code Expect: 100-continue} when its content is read: RFC 9110 section 10.1.1 says a server
 * MUST ignore that expectation in an HTTP/1.0 request (an HTTP/1.0 client does not know interim
 * responses). Jetty 12.1 honours it for every version ({@code HttpStreamOverHTTP1.parsedHeader});
 * Jetty 9.4, kiln's own parser and Undertow do not. A customizer of the connector's
 * configuration, it wraps the stream of each HTTP/1.0 request.
 */
final class Http10IgnoresExpect implements HttpConfiguration.Customizer {
    @Override
    public Request customize(Request request, HttpFields.Mutable responseHeaders) {
        if (request.getConnectionMetaData().getHttpVersion() == HttpVersion.HTTP_1_0) {
            request.addHttpStreamWrapper(stream -> new HttpStream.Wrapper(stream) {
                @Override
                public void send(MetaData.Request metaData, MetaData.Response response, boolean last, ByteBuffer content, Callback callback) {
                    if (response != null && response.getStatus() == 100) {
                        callback.succeeded();
                        return;
                    }
                    super.send(metaData, response, last, content, callback);
                }
            });
        }
        return request;
    }
}

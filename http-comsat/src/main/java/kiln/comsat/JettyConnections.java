package kiln.comsat;

import java.nio.ByteBuffer;
import java.util.regex.Pattern;

import kiln.http.Response;
import org.eclipse.jetty.http.BadMessageException;
import org.eclipse.jetty.http.HttpCompliance;
import org.eclipse.jetty.http.HttpGenerator;
import org.eclipse.jetty.http.HttpParser;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.HttpChannelOverHttp;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnection;
import org.eclipse.jetty.server.HttpConnectionFactory;

/**
 * Jetty 9.4's HTTP/1.1 connections, adjusted where the contract and RFC 9112 say otherwise than
 * Jetty does:
 * <ul>
 *   <li>response heads: see {@link ContractHead};</li>
 *   <li>a malformed HTTP-version ({@code HTTP/1.x}) or none at all (an HTTP/0.9 request line) is a
 *       malformed request, 400 (RFC 9112 sections 2.3 and 3), where Jetty answers 505; a well-formed
 *       version Jetty does not serve ({@code HTTP/9.9}, and {@code HTTP/2.0} over HTTP/1.1, which
 *       Jetty answers with 426) is 505 (RFC 9110 section 15.6.6), with the same body as the
 *       other front ends ({@link Response#versionNotSupported}).</li>
 * </ul>
 * Jetty's parser does not tell which of those it saw, so {@link RequestLineParser} keeps a copy of
 * each request line for {@link Channel#badMessage} to look at.
 */
final class JettyConnections {
    /** RFC 9112 section 2.3: HTTP-version = HTTP-name "/" DIGIT "." DIGIT */
    private static final Pattern HTTP_VERSION = Pattern.compile("HTTP/[0-9]\\.[0-9]");

    private JettyConnections() {
    }

    /** @return the factory for the server's connector */
    static HttpConnectionFactory factory(HttpConfiguration config) {
        return new HttpConnectionFactory(config) {
            @Override
            public Connection newConnection(Connector connector, EndPoint endPoint) {
                return configure(new KilnConnection(getHttpConfiguration(), connector, endPoint, getHttpCompliance(),
                    isRecordHttpComplianceViolations()), connector, endPoint);
            }
        };
    }

    private static final class KilnConnection extends HttpConnection {
        KilnConnection(HttpConfiguration config, Connector connector, EndPoint endPoint, HttpCompliance compliance, boolean record) {
            super(config, connector, endPoint, compliance, record);
        }

        @Override
        protected HttpGenerator newHttpGenerator() {
            return new ContractHead.Generator();
        }

        @Override
        protected HttpChannelOverHttp newHttpChannel() {
            return new Channel(this, getConnector(), getHttpConfiguration(), getEndPoint());
        }

        @Override
        protected HttpParser newHttpParser(HttpCompliance compliance) {
            return new RequestLineParser(newRequestHandler(), getHttpConfiguration().getRequestHeaderSize(), compliance);
        }
    }

    /** Jetty's channel, with its bad-message statuses checked against the request line. */
    private static final class Channel extends HttpChannelOverHttp {
        private final HttpConnection connection;

        Channel(HttpConnection connection, Connector connector, HttpConfiguration config, EndPoint endPoint) {
            super(connection, connector, config, endPoint, connection);
            this.connection = connection;
        }

        @Override
        public void badMessage(BadMessageException failure) {
            super.badMessage(classify(failure, ((RequestLineParser) connection.getParser()).requestLine()));
        }
    }

    /**
     * @param requestLine the request line the failure happened in, without its CRLF
     * @return {@code failure}, or the failure the contract prescribes for that request line
     */
    static BadMessageException classify(BadMessageException failure, String requestLine) {
        int code = failure.getCode();
        if (code != HttpStatus.HTTP_VERSION_NOT_SUPPORTED_505 && code != HttpStatus.UPGRADE_REQUIRED_426) return failure;
        String[] parts = requestLine.split(" ", -1);
        if (parts.length != 3) {
            return new BadMessageException(HttpStatus.BAD_REQUEST_400, "malformed request line: expected METHOD SP TARGET SP VERSION", failure);
        }
        String version = parts[2];
        if (!HTTP_VERSION.matcher(version).matches()) {
            return new BadMessageException(HttpStatus.BAD_REQUEST_400, "malformed HTTP version", failure);
        }
        // The detail of Response.versionNotSupported, so that the 505 body is every front end's.
        return new BadMessageException(HttpStatus.HTTP_VERSION_NOT_SUPPORTED_505,
            "HTTP version " + version.substring("HTTP/".length()) + " not supported; use HTTP/1.1", failure);
    }

    /** Jetty's parser, keeping the bytes of the current request line (up to 8 KiB) as it goes. */
    static final class RequestLineParser extends HttpParser {
        private static final int MAX = 8192;
        private final StringBuilder line = new StringBuilder(64);
        private boolean lineDone;

        RequestLineParser(HttpParser.RequestHandler handler, int maxHeaderBytes, HttpCompliance compliance) {
            super(handler, maxHeaderBytes, compliance);
        }

        @Override
        public boolean parseNext(ByteBuffer buffer) {
            if (isStart() && lineDone) {
                line.setLength(0);
                lineDone = false;
            }
            for (int i = buffer.position(); !lineDone && i < buffer.limit(); i++) {
                char c = (char) (buffer.get(i) & 0xff);
                if (c == '\n' && line.length() > 0 || line.length() >= MAX) {
                    lineDone = true;
                } else if (c != '\r' && c != '\n') {
                    line.append(c);  // leading empty lines are skipped, as RFC 9112 section 2.2 allows
                }
            }
            return super.parseNext(buffer);
        }

        /** @return the current (or last) request line without CR and LF */
        String requestLine() {
            return line.toString();
        }
    }
}

package kiln.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import kiln.demo.Endpoint;
import kiln.demo.Endpoints;
import kiln.http.Http;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * deploy/nginx/ as shipped, run by Debian's nginx on loopback in front of the Kilim server: the
 * site config, its TLS server block (with a certificate made for the test) and the shared snippet
 * are copied into a prefix under target/, and only what a test machine must change is rewritten
 * (listen addresses and ports, the upstream port, the certificate and ACME paths); every rewrite
 * must find its line, so a config that drifts fails here. nginx runs as this user with
 * {@code -p PREFIX -c FILE} and its error log in the prefix, which must hold no error at the end.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class NginxTest {
    private static final Path DEPLOY = Dirs.repo().resolve("deploy/nginx");
    private static final int LARGE_BODY = 900 * 1024;
    /** Over client_max_body_size (1m): nginx's own 413. */
    private static final int TOO_LARGE = 1100 * 1024;

    private static ServerProcess kiln;
    private static Process nginx;
    private static Path prefix;
    private static int httpPort;
    private static int httpsPort;
    private static HttpClient client;
    private static HttpClient tlsClient;

    @BeforeAll
    static void start() throws Exception {
        assertTrue(Files.isExecutable(Path.of("/usr/sbin/nginx")),
            "nginx is not installed: apt-get install nginx-light (.ci/run installs it)");
        // in front of the Kilim server, whatever -Dkiln.servers selects: the deploy/ files are written for it
        kiln = ServerProcess.start(FrontEnd.load(Dirs.repo().resolve("frontends.conf")).stream()
            .filter(f -> f.id.equals("kilim")).findFirst().orElseThrow(), "NginxTest");
        prefix = Files.createDirectories(Dirs.target().resolve("nginx-test"));
        ServerProcess.deleteRecursively(prefix);
        for (String d : List.of("conf/sites", "conf/snippets", "logs", "tmp", "tls", "acme/.well-known/acme-challenge")) {
            Files.createDirectories(prefix.resolve(d));
        }
        httpPort = freePort();
        httpsPort = freePort();
        makeCertificate();
        writeConfig();

        Command test = Command.run(30, List.of("/usr/sbin/nginx", "-t", "-p", prefix + "/", "-c", prefix.resolve("conf/nginx.conf").toString()));
        assertEquals(0, test.exitCode, "nginx -t:\n" + test.output);
        nginx = new ProcessBuilder("/usr/sbin/nginx", "-p", prefix + "/", "-c", prefix.resolve("conf/nginx.conf").toString(), "-g", "daemon off;")
            .redirectErrorStream(true).redirectOutput(prefix.resolve("logs/stdout.log").toFile()).start();
        waitForPort(httpPort);
        waitForPort(httpsPort);

        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
        tlsClient = HttpClient.newBuilder().sslContext(trusting(prefix.resolve("tls/cert.pem")))
            .connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() throws Exception {
        if (nginx != null) {
            nginx.toHandle().destroy();  // SIGTERM: nginx's fast shutdown
            if (!nginx.waitFor(10, TimeUnit.SECONDS)) nginx.toHandle().destroyForcibly();
        }
        if (kiln != null) {
            int exit = kiln.stop();
            assertEquals(0, exit, "kiln's exit code after SIGTERM; log " + kiln.log);
            ServerProcess.deleteRecursively(kiln.dataDir);
        }
    }

    /** The shipped files, rewritten for loopback and free ports; a main config of the test's own around them. */
    private static void writeConfig() throws IOException {
        String site = Files.readString(DEPLOY.resolve("kiln.conf"));
        site = replace(site, "server 127.0.0.1:8080;", "server 127.0.0.1:" + kiln.port + ";");
        site = replace(site, "listen 80;", "listen 127.0.0.1:" + httpPort + ";");
        site = replace(site, "listen [::]:80;", "");
        site = replace(site, "root /var/www/letsencrypt;", "root " + prefix.resolve("acme") + ";");
        String tls = Files.readString(DEPLOY.resolve("kiln-tls.conf"));
        tls = replace(tls, "listen 443 ssl http2;", "listen 127.0.0.1:" + httpsPort + " ssl http2;");
        tls = replace(tls, "listen [::]:443 ssl http2;", "");
        tls = replace(tls, "/etc/letsencrypt/live/kiln.example.com/fullchain.pem", prefix.resolve("tls/cert.pem").toString());
        tls = replace(tls, "/etc/letsencrypt/live/kiln.example.com/privkey.pem", prefix.resolve("tls/key.pem").toString());
        Files.writeString(prefix.resolve("conf/sites/kiln.conf"), site);
        Files.writeString(prefix.resolve("conf/sites/kiln-tls.conf"), tls);
        Files.copy(DEPLOY.resolve("kiln-proxy.conf"), prefix.resolve("conf/snippets/kiln-proxy.conf"));
        String tmp = prefix.resolve("tmp").toString();
        // Debian's nginx.conf in miniature: one worker as on a 1-vCPU VPS, everything under the prefix.
        String main = (System.getProperty("user.name").equals("root") ? "user root;\n" : "")
            + "worker_processes 1;\n"
            + "pid " + prefix.resolve("nginx.pid") + ";\n"
            + "error_log " + prefix.resolve("logs/error.log") + " info;\n"
            + "events { worker_connections 1024; }\n"
            + "http {\n"
            + "  default_type application/octet-stream;\n"
            + "  access_log " + prefix.resolve("logs/access.log") + ";\n"
            + "  client_body_temp_path " + tmp + "/body;\n  proxy_temp_path " + tmp + "/proxy;\n"
            + "  fastcgi_temp_path " + tmp + "/fastcgi;\n  uwsgi_temp_path " + tmp + "/uwsgi;\n  scgi_temp_path " + tmp + "/scgi;\n"
            + "  include sites/kiln.conf;\n  include sites/kiln-tls.conf;\n"
            + "}\n";
        Files.writeString(prefix.resolve("conf/nginx.conf"), main);
    }

    private static String replace(String text, String what, String with) {
        assertTrue(text.contains(what), () -> "the shipped config no longer contains '" + what + "': update NginxTest with it");
        return text.replace(what, with);
    }

    private static void makeCertificate() throws Exception {
        Command c = Command.run(60, List.of("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", prefix.resolve("tls/key.pem").toString(), "-out", prefix.resolve("tls/cert.pem").toString(),
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"));
        assertEquals(0, c.exitCode, "openssl:\n" + c.output);
    }

    private static SSLContext trusting(Path certificate) throws Exception {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        try (InputStream in = Files.newInputStream(certificate)) {
            store.setCertificateEntry("kiln-test", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(store);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void waitForPort(int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
                return;
            } catch (IOException e) {
                if (!nginx.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError("nginx is not listening on " + port + ":\n" + nginxLogs(), e);
                }
                Thread.sleep(50);
            }
        }
    }

    private static String nginxLogs() {
        StringBuilder s = new StringBuilder();
        for (String log : List.of("logs/stdout.log", "logs/error.log")) {
            try {
                s.append("--- ").append(log).append(" ---\n").append(Files.readString(prefix.resolve(log)));
            } catch (IOException e) {
                s.append("(no ").append(log).append(")\n");
            }
        }
        return s.toString();
    }

    private static HttpResponse<byte[]> send(HttpClient c, HttpRequest.Builder request) throws Exception {
        return c.send(request.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static HttpRequest.Builder viaNginx(String target) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + target));
    }

    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    /** Endpoints that answer rows picked at random: their bodies differ from one request to the next. */
    private static final Set<String> RANDOM_ROWS = Set.of("/db", "/queries", "/updates", "/cached-queries");

    @Test
    @Order(1)
    void everyEndpointIsServedThroughNginxAsKilnServesIt() throws Exception {
        for (Endpoint e : Endpoints.ALL) {
            if (e.path.equals("/metrics")) continue;  // kept off the public site: metricsStayOffThePublicSite
            if (e.path.endsWith("/events")) continue;  // streams that never end: serverSentEventsPassThroughAtOnce
            HttpResponse<byte[]> proxied = send(client, viaNginx(e.example));
            HttpResponse<byte[]> direct = Contract.get(kiln, e.example);
            assertEquals(200, proxied.statusCode(), () -> e.example + " through nginx: " + text(proxied));
            assertEquals(direct.headers().firstValue("Content-Type"), proxied.headers().firstValue("Content-Type"), e.example);
            if (!RANDOM_ROWS.contains(e.path)) {
                assertArrayEquals(direct.body(), proxied.body(), () -> e.example + " through nginx: " + text(proxied));
            }
        }
        assertEquals("ok", text(send(client, viaNginx("/healthz"))));
        HttpResponse<byte[]> missing = send(client, viaNginx("/nope"));
        assertEquals(404, missing.statusCode());
        assertEquals("404 Not Found: no such path: /nope\n", text(missing), "kiln's 404, passed on");
        HttpResponse<byte[]> post = send(client, viaNginx("/plaintext").POST(HttpRequest.BodyPublishers.ofString("x=1")));
        assertEquals(405, post.statusCode());
        assertEquals("GET, HEAD, OPTIONS", post.headers().firstValue("Allow").orElse(null));
    }

    /**
     * A server-sent event reaches the client through nginx as soon as kiln sends it: nginx does not
     * buffer the stream (kiln's {@code X-Accel-Buffering: no}), and the live page works behind it.
     * With buffering on, nginx would hold the small events until its buffer filled or the stream ended.
     */
    @Test
    @Order(1)
    void serverSentEventsPassThroughAtOnce() throws Exception {
        try (RawConnection c = RawConnection.open("nginx", httpPort, 5_000)) {
            RawResponse head = c.send("GET /updates/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").readStreamHead();
            assertEquals(200, head.status, head.head);
            assertEquals("text/event-stream", head.header("Content-Type"));
            assertEquals(null, head.header("Content-Encoding"), "an event stream is not gzipped (gzip would buffer it)");
            assertEquals("retry: 2000\n\n", c.readChunk());
            String updated = text(send(client, viaNginx("/updates?queries=1")));
            String event = c.readChunk();  // within the 5 s read timeout, or the test fails
            assertTrue(event.startsWith("id: ") && event.contains("event: update\ndata: {"), event);
            assertTrue(event.contains("\"worlds\":" + updated), event + " vs " + updated);
        }
        HttpResponse<byte[]> page = send(client, viaNginx("/live"));
        assertEquals(200, page.statusCode());
        assertTrue(text(page).contains("new EventSource(\"/updates/events\")"));
    }

    /** kiln answers /metrics on its own port; nginx answers 404 for it, however the path is spelled, over HTTP and HTTPS. */
    @Test
    @Order(1)
    void metricsStayOffThePublicSite() throws Exception {
        assertEquals(200, Contract.get(kiln, "/metrics").statusCode(), "kiln itself serves /metrics");
        for (String target : List.of("/metrics", "/metrics?name=x", "/%6detrics", "//metrics")) {
            HttpResponse<byte[]> r = send(client, viaNginx(target));
            assertEquals(404, r.statusCode(), () -> target + " through nginx: " + text(r));
            assertFalse(text(r).contains("http_requests_total"), target);
        }
        assertEquals(404, send(client, viaNginx("/metrics").method("HEAD", HttpRequest.BodyPublishers.noBody())).statusCode());
        HttpResponse<byte[]> tls = send(tlsClient, HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + httpsPort + "/metrics")));
        assertEquals(404, tls.statusCode(), "the TLS server block shares the rule");
    }

    /** 100 requests through nginx on fresh client connections: nginx keeps reusing its pooled upstream connections. */
    @Test
    @Order(2)
    void nginxReusesItsUpstreamConnections() throws Exception {
        send(client, viaNginx("/plaintext"));  // the pool has a connection now
        Set<Integer> before = upstreamConnections();
        for (int i = 0; i < 100; i++) {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), httpPort)) {  // a new client connection each time
                s.setSoTimeout(10_000);
                assertEquals("Hello, World!", exchange(s, "GET /plaintext HTTP/1.1\r\nHost: kiln.example.com\r\nConnection: close\r\n\r\n"));
            }
        }
        Set<Integer> opened = upstreamConnections();
        opened.removeAll(before);
        assertTrue(opened.size() <= 2, () -> "nginx opened " + opened.size() + " upstream connections for 100 requests made one"
            + " after another: the keep-alive pool is not used (ports " + opened + ")");
    }

    /** A client's keep-alive connection to nginx carries several requests. */
    @Test
    @Order(3)
    void aClientConnectionCarriesSeveralRequests() throws Exception {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), httpPort)) {
            s.setSoTimeout(10_000);
            for (int i = 0; i < 5; i++) {
                assertEquals("Hello, World!", exchange(s, "GET /plaintext HTTP/1.1\r\nHost: kiln.example.com\r\n\r\n"), "request " + i);
            }
        }
    }

    /**
     * A 900 KB body: nginx accepts it (client_max_body_size 1m) and passes it on; kiln refuses it with
     * 413 before reading it. The client must get kiln's 413, not a 502 from nginx finding the
     * connection reset under it; five times, since a reset is a race.
     */
    @Test
    @Order(4)
    void aLargeBodyGetsKilnsRefusalNotABadGateway() throws Exception {
        byte[] body = new byte[LARGE_BODY];
        java.util.Arrays.fill(body, (byte) 'a');
        for (int i = 0; i < 5; i++) {
            HttpResponse<byte[]> r = send(client, viaNginx("/plaintext").POST(HttpRequest.BodyPublishers.ofByteArray(body)));
            int attempt = i;
            assertEquals(413, r.statusCode(), () -> "attempt " + attempt + ": " + text(r) + "\n" + nginxLogs());
            assertEquals("413 Content Too Large: request body of " + LARGE_BODY + " bytes exceeds 65536\n", text(r), "kiln's own 413");
        }
        // above client_max_body_size nginx refuses it itself
        HttpResponse<byte[]> tooLarge = send(client, viaNginx("/plaintext").POST(HttpRequest.BodyPublishers.ofByteArray(new byte[TOO_LARGE])));
        assertEquals(413, tooLarge.statusCode());
        assertTrue(text(tooLarge).contains("nginx"), "nginx's own 413 page");
        // and kiln still serves
        assertEquals("Hello, World!", text(send(client, viaNginx("/plaintext"))));
    }

    @Test
    @Order(5)
    void htmlAndJsonAreCompressedShortAnswersAreNot() throws Exception {
        for (String target : List.of("/fortunes", "/queries?queries=20", "/")) {
            HttpResponse<byte[]> r = send(client, viaNginx(target).header("Accept-Encoding", "gzip"));
            assertEquals(200, r.statusCode());
            assertEquals("gzip", r.headers().firstValue("Content-Encoding").orElse(null), target + " is compressed");
            assertEquals("Accept-Encoding", r.headers().firstValue("Vary").orElse(null));
            byte[] plain = gunzip(r.body());
            if (target.equals("/fortunes")) assertArrayEquals(Contract.get(kiln, "/fortunes").body(), plain);
            if (target.startsWith("/queries")) assertEquals(20, Contract.JSON.readTree(plain).size());
        }
        for (String target : List.of("/json", "/plaintext")) {
            HttpResponse<byte[]> r = send(client, viaNginx(target).header("Accept-Encoding", "gzip"));
            assertFalse(r.headers().firstValue("Content-Encoding").isPresent(), target + " (under gzip_min_length, or not HTML/JSON)");
        }
    }

    @Test
    @Order(6)
    void theTlsServerBlockServesKilnOverHttp2() throws Exception {
        HttpResponse<byte[]> r = send(tlsClient, HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + httpsPort + "/healthz")));
        assertEquals(200, r.statusCode());
        assertEquals("ok", text(r));
        assertEquals(HttpClient.Version.HTTP_2, r.version());
        HttpResponse<byte[]> json = send(tlsClient, HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + httpsPort + "/json")));
        assertEquals("{\"message\":\"Hello, World!\"}", text(json));
        assertEquals(Http.APPLICATION_JSON, json.headers().firstValue("Content-Type").orElse(null));
    }

    /** certbot certonly --webroot writes its token under the webroot; nginx serves it on port 80. */
    @Test
    @Order(7)
    void theAcmeChallengeIsServedFromTheWebroot() throws Exception {
        Files.writeString(prefix.resolve("acme/.well-known/acme-challenge/token-123"), "token-123.thumbprint");
        HttpResponse<byte[]> r = send(client, viaNginx("/.well-known/acme-challenge/token-123"));
        assertEquals(200, r.statusCode());
        assertEquals("token-123.thumbprint", text(r));
    }

    @Test
    @Order(100)
    void nginxLoggedNoError() throws Exception {
        List<String> bad = new ArrayList<>();
        int refusedByNginx = 0;
        for (String line : Files.readAllLines(prefix.resolve("logs/error.log"))) {
            if (line.contains("[error]") && line.contains("client intended to send too large body: " + TOO_LARGE + " bytes")) {
                refusedByNginx++;  // nginx logs its own 413 at [error]: the one the large-body test asked for
            } else if (line.contains("[error]") || line.contains("[crit]") || line.contains("[alert]") || line.contains("[emerg]")) {
                bad.add(line);
            }
        }
        assertTrue(bad.isEmpty(), () -> "nginx's error log:\n" + String.join("\n", bad));
        assertEquals(1, refusedByNginx, "nginx's own 413 was logged once");
        assertTrue(nginx.isAlive(), "nginx is still running");
    }

    /** Sends one request and reads one response with a Content-Length; @return its body */
    private static String exchange(Socket s, String request) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(request.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        InputStream in = s.getInputStream();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) throw new IOException("connection closed after " + head.size() + " bytes of head: " + head);
            head.write(b);
        }
        String h = head.toString(StandardCharsets.ISO_8859_1);
        assertTrue(h.startsWith("HTTP/1.1 200 "), h);
        int length = -1;
        for (String line : h.split("\r\n")) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) length = Integer.parseInt(line.substring(15).trim());
        }
        assertTrue(length >= 0, () -> "no Content-Length in " + h);
        byte[] body = in.readNBytes(length);
        return new String(body, StandardCharsets.UTF_8);
    }

    /** @return the client ports of every connection to kiln's port that `ss` lists (open or in TIME-WAIT) */
    private static Set<Integer> upstreamConnections() throws Exception {
        Command ss = Command.run(10, List.of("ss", "-tanH"));
        assertEquals(0, ss.exitCode, ss.output);
        Set<Integer> ports = new HashSet<>();
        String kilnEnd = "127.0.0.1:" + kiln.port;
        for (String line : ss.output.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 5 || f[0].equals("LISTEN")) continue;
            String local = f[3];
            String peer = f[4];
            if (peer.equals(kilnEnd)) ports.add(port(local));
            else if (local.equals(kilnEnd)) ports.add(port(peer));
        }
        return ports;
    }

    private static int port(String address) {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    private static byte[] gunzip(byte[] gz) throws IOException {
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(gz))) {
            byte[] plain = in.readAllBytes();
            assertNotNull(plain);
            return plain;
        }
    }
}

package kiln.bench.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.util.ResourceLeakDetector;

/**
 * The JVM anchor of {@code ./ab-sweep.sh} and {@code scripts/cpu-ab.py}: Netty, the JVM's front-runner
 * on TechEmpower's plaintext and JSON tests, set up as TechEmpower's Netty entry
 * (FrameworkBenchmarks, frameworks/Java/netty) is: one event loop per CPU on the native epoll transport,
 * the leak detector off, Netty's HTTP/1.1 decoder and encoder with header validation off, pooled
 * buffers, a response written per request and flushed once per read (pipelining). What differs, and
 * why: the response heads are kiln's ({@link Heads}), built once a second per event loop rather than
 * per connection; {@code /json} is serialized by Jackson, as in kiln's demo; {@code /hello} is kiln's
 * 10-byte answer; keep-alive follows the request, as kiln does. docs/benchmarks/ has the page on
 * each anchor's configuration and why it is fair.
 *
 * <pre>{@code java @bench-netty/jvm.options -jar bench-netty/target/netty-anchor.jar --port 8090 [--bind 127.0.0.1] [--transport epoll|io_uring|nio] [--threads N]}</pre>
 *
 * Prints {@code netty-anchor listening on http://HOST:PORT/} once it serves. Not part of kiln.
 */
public final class NettyAnchor {
    private static final String USAGE = """
        usage: java -jar netty-anchor.jar [--port 8090] [--bind 127.0.0.1] [--transport epoll|io_uring|nio] [--threads N]
          --port N          TCP port, 0 picks a free one (default 8090)
          --bind ADDR       address to listen on (default 127.0.0.1)
          --transport T     epoll (default; NIO when epoll is unavailable), io_uring (Linux 5.9+), or nio
          --threads N       event loops (default: one per CPU this JVM may use)
        """;

    /** Netty's I/O transports this anchor can run on. */
    enum Transport {
        EPOLL, IO_URING, NIO;

        IoHandlerFactory handlers() {
            return switch (this) {
                case EPOLL -> EpollIoHandler.newFactory();
                case IO_URING -> IoUringIoHandler.newFactory();
                case NIO -> NioIoHandler.newFactory();
            };
        }

        Class<? extends ServerChannel> serverChannel() {
            return switch (this) {
                case EPOLL -> EpollServerSocketChannel.class;
                case IO_URING -> IoUringServerSocketChannel.class;
                case NIO -> NioServerSocketChannel.class;
            };
        }
    }

    private NettyAnchor() {
    }

    public static void main(String[] args) throws InterruptedException {
        int port = 8090;
        String bind = "127.0.0.1";
        Transport transport = Transport.EPOLL;
        int threads = Runtime.getRuntime().availableProcessors();
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            if (option.equals("--help") || option.equals("-h")) {
                System.out.print(USAGE);
                return;
            }
            if (i + 1 >= args.length) usage("option " + option + " needs a value");
            String value = args[++i];
            switch (option) {
                case "--port" -> port = number(option, value, 0, 65535);
                case "--bind" -> bind = value;
                case "--threads" -> threads = number(option, value, 1, 1024);
                case "--transport" -> transport = switch (value) {
                    case "epoll" -> Transport.EPOLL;
                    case "io_uring" -> Transport.IO_URING;
                    case "nio" -> Transport.NIO;
                    default -> usage("--transport is epoll, io_uring or nio, got '" + value + "'");
                };
                default -> usage("unknown option " + option);
            }
        }
        // As TechEmpower's entry: no sampling of buffers for leaks.
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
        if (transport == Transport.EPOLL && !Epoll.isAvailable()) {
            System.out.println("netty-anchor: epoll is unavailable (" + Epoll.unavailabilityCause() + "): using NIO");
            transport = Transport.NIO;
        }
        if (transport == Transport.IO_URING && !IoUring.isAvailable()) {
            System.err.println("netty-anchor: io_uring is unavailable: " + IoUring.unavailabilityCause());
            System.exit(1);
        }
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, transport.handlers());
        Heads.install(group);
        // Netty 4.2's default allocator is the adaptive one; TechEmpower's entry was measured on the pooled one.
        PooledByteBufAllocator pooled = PooledByteBufAllocator.DEFAULT;
        HttpDecoderConfig decoding = new HttpDecoderConfig()
            .setMaxInitialLineLength(4096).setMaxHeaderSize(8192).setMaxChunkSize(8192).setValidateHeaders(false);
        Channel server;
        try {
            server = new ServerBootstrap()
                .group(group)
                .channel(transport.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 8192)
                .option(ChannelOption.SO_REUSEADDR, true)
                .option(ChannelOption.ALLOCATOR, pooled)
                .childOption(ChannelOption.ALLOCATOR, pooled)
                .childHandler(new ChannelInitializer<>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        // Runs on the connection's event loop: its heads are that loop's.
                        ch.pipeline()
                            .addLast("encoder", new HeadEncoder())
                            .addLast("decoder", new HttpRequestDecoder(decoding))
                            .addLast("handler", new HelloHandler(Heads.ofThisLoop()));
                    }
                })
                .bind(bind, port).sync().channel();
        } catch (Exception e) {
            System.err.println("netty-anchor: cannot listen on " + bind + ":" + port + ": " + e);
            group.shutdownGracefully();
            System.exit(1);
            return;
        }
        int actual = ((java.net.InetSocketAddress) server.localAddress()).getPort();
        System.out.println("netty-anchor: " + transport.name().toLowerCase(java.util.Locale.ROOT) + ", " + threads
            + " event loop(s), pooled buffers, Netty " + io.netty.util.Version.identify().get("netty-common").artifactVersion());
        System.out.println("netty-anchor listening on http://" + bind + ":" + actual + "/");
        System.out.flush();
        server.closeFuture().sync();
    }

    private static int number(String option, String value, int min, int max) {
        try {
            int n = Integer.parseInt(value);
            if (n >= min && n <= max) return n;
        } catch (NumberFormatException e) {
            // answered below
        }
        return usage(option + " must be " + min + ".." + max + ", got '" + value + "'");
    }

    private static <T> T usage(String problem) {
        System.err.print("netty-anchor: " + problem + "\n" + USAGE);
        System.exit(2);
        return null;
    }
}

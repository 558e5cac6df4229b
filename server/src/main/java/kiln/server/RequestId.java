package kiln.server;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import kiln.http.Response;
import kiln.http.Request;

/**
 * Middleware that gives every request an id, to find one request in the access log and in a
 * client's or a proxy's logs: the {@code X-Request-Id} the client (or nginx, with
 * {@code proxy_set_header X-Request-Id $request_id}) sent, when it is a plausible id, else a new one;
 * it is the request's {@link #ATTRIBUTE} and is echoed in the response's {@code X-Request-Id}.
 *
 * <p>A made id is this process's random 32-bit prefix and a counter, e.g. {@code 5f3a09c1-1a7}:
 * unique within a run and cheap (no {@code SecureRandom} per request); across servers and restarts
 * the prefix makes a clash unlikely, not impossible (so do not use one as a secret or a key).
 */
public final class RequestId implements Filter {
    /** The request attribute holding the id, a {@code String}. */
    public static final String ATTRIBUTE = "kiln.requestId";
    /** The header that carries the id both ways. */
    public static final String HEADER = "X-Request-Id";
    /** A longer id is not taken from the client: it is made anew. */
    static final int MAX_LENGTH = 128;

    private final String prefix = String.format("%08x-", ThreadLocalRandom.current().nextInt());
    private final AtomicLong counter = new AtomicLong();

    /**
     * A request id filter with a random prefix of its own: {@code router.filter(new RequestId())},
     * first, so that every filter after it and the handler see the id
     * ({@link #of}).
     */
    public RequestId() {
    }

    @Override
    public Response before(Request request, Response answer) {
        String id = request.header(HEADER);
        request.attribute(ATTRIBUTE, plausible(id) ? id : prefix + Long.toHexString(counter.incrementAndGet()));
        return null;
    }

    @Override
    public Response after(Request request, Response response) {
        return response.header(HEADER, (String) request.attribute(ATTRIBUTE));
    }

    /** @return the id of {@code request}, or null when no {@link RequestId} filter saw it */
    public static String of(Request request) {
        return (String) request.attribute(ATTRIBUTE);
    }

    /** An id is taken from a client only when it cannot forge a log line: 1..128 of {@code A-Z a-z 0-9 - _ . : / + =}. */
    static boolean plausible(String id) {
        if (id == null || id.isEmpty() || id.length() > MAX_LENGTH) return false;
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            boolean ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || "-_.:/+=".indexOf(c) >= 0;
            if (!ok) return false;
        }
        return true;
    }
}

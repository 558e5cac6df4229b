package kiln.server;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;

import kiln.http.Response;
import kiln.http.Request;

/**
 * Middleware for cross-origin requests, as the Fetch standard's CORS protocol describes them
 * (https://fetch.spec.whatwg.org/#http-cors-protocol): lets a page of an allowed origin call this
 * server's API from a browser ({@code fetch}, {@code EventSource}).
 *
 * <ul>
 *   <li>A preflight ({@code OPTIONS} with {@code Origin} and {@code Access-Control-Request-Method})
 *       on any path is answered here, before routing and authentication: 204 with
 *       {@code Access-Control-Allow-Origin}, {@code -Allow-Methods} (the path's {@code Allow} when a
 *       route has it, else {@link #DEFAULT_METHODS}), {@code -Allow-Headers} (those requested),
 *       {@code -Max-Age} and {@code Vary}. From an origin not allowed: 403, without those headers,
 *       so the browser refuses the request it asked about.</li>
 *   <li>Every other answer to an allowed origin, errors included (so a page can read a 401 or a
 *       404), gets {@code Access-Control-Allow-Origin}, {@code Access-Control-Expose-Headers}
 *       ({@link #EXPOSED}) and, for credentials, {@code Access-Control-Allow-Credentials}; every
 *       answer to a request with an {@code Origin} gets {@code Vary: Origin}, so a cache keeps
 *       one answer per origin.</li>
 * </ul>
 *
 * <pre>{@code
 * router.filter(Cors.allow("https://app.example.com"));   // or Cors.allow("*") for any origin, without credentials
 * }</pre>
 */
public final class Cors implements Filter {
    /** The methods a preflight allows on a path no route matches. */
    public static final String DEFAULT_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE";
    /** Response headers a page may read beyond the CORS-safelisted ones. */
    public static final String EXPOSED = "Location, Retry-After, X-Request-Id";
    /** How long a browser may cache a preflight's answer, s (Chromium caps it at 7,200). */
    public static final int MAX_AGE_SECONDS = 600;

    private final Set<String> origins;
    private final boolean anyOrigin;
    private final boolean credentials;

    private Cors(Set<String> origins, boolean credentials) {
        this.origins = origins;
        this.anyOrigin = origins.contains("*");
        this.credentials = credentials;
        if (anyOrigin && credentials) {
            throw new IllegalArgumentException("CORS with credentials needs the origins named, not '*' (Fetch standard)");
        }
    }

    /**
     * CORS for pages of these origins, without credentials:
     * {@code router.filter(Cors.allow("https://app.example.com", "http://localhost:5173"))}.
     *
     * @param origins the origins allowed, each {@code scheme://host[:port]} as a browser sends it in
     *                {@code Origin} (no path, no trailing '/'), or {@code *} for any (without credentials)
     * @return the filter; requests carry no cookies or {@code Authorization} cross-origin ({@link #withCredentials()})
     * @throws IllegalArgumentException when an origin is not of that form, or none is given
     */
    public static Cors allow(String... origins) {
        return allow(java.util.List.of(origins));
    }

    /** As {@link #allow(String...)}. */
    public static Cors allow(Collection<String> origins) {
        if (origins.isEmpty()) throw new IllegalArgumentException("CORS needs at least one origin, or *");
        Set<String> set = new LinkedHashSet<>();
        for (String o : origins) set.add(checkOrigin(o.trim()));
        return new Cors(Set.copyOf(set), false);
    }

    /**
     * @return a copy that lets a page send credentials (cookies, {@code Authorization}) cross-origin:
     *         {@code Access-Control-Allow-Credentials: true}; only with named origins
     * @throws IllegalArgumentException when the origins include {@code *}
     */
    public Cors withCredentials() {
        return new Cors(origins, true);
    }

    private static String checkOrigin(String o) {
        if (o.equals("*")) return o;
        int scheme = o.indexOf("://");
        boolean ok = scheme > 0 && o.length() > scheme + 3 && o.indexOf('/', scheme + 3) < 0 && !o.contains("?") && !o.contains(" ");
        if (!ok) throw new IllegalArgumentException("a CORS origin is scheme://host[:port] (no path) or *, got '" + o + "'");
        return o;
    }

    @Override
    public Response before(Request request, Response answer) {
        if (!isPreflight(request)) return null;  // a plain OPTIONS gets the router's Allow answer
        String origin = request.header("Origin");
        Response response;
        if (!allowed(origin)) {
            response = Response.error(403, "origin " + origin + " is not allowed to call this server (CORS)");
        } else {
            String methods = answer != null && answer.header("Allow") != null ? answer.header("Allow") : DEFAULT_METHODS;
            response = Response.noContent()
                .header("Access-Control-Allow-Origin", anyOrigin ? "*" : origin)
                .header("Access-Control-Allow-Methods", methods)
                .header("Access-Control-Max-Age", Integer.toString(MAX_AGE_SECONDS));
            String headers = request.header("Access-Control-Request-Headers");
            if (headers != null && !headers.isBlank()) response = response.header("Access-Control-Allow-Headers", headers);
            if (credentials) response = response.header("Access-Control-Allow-Credentials", "true");
        }
        return response.header("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
    }

    @Override
    public Response after(Request request, Response response) {
        String origin = request.header("Origin");
        if (origin == null || isPreflight(request)) return response;  // not cross-origin, or answered by before()
        if (!allowed(origin)) return response.header("Vary", "Origin");
        response = response.header("Access-Control-Allow-Origin", anyOrigin ? "*" : origin)
            .header("Access-Control-Expose-Headers", EXPOSED)
            .header("Vary", "Origin");
        return credentials ? response.header("Access-Control-Allow-Credentials", "true") : response;
    }

    /** @return whether {@code request} is a CORS preflight: OPTIONS with Origin and Access-Control-Request-Method */
    static boolean isPreflight(Request request) {
        return "OPTIONS".equals(request.method()) && request.header("Origin") != null
            && request.header("Access-Control-Request-Method") != null;
    }

    private boolean allowed(String origin) {
        return anyOrigin || origins.contains(origin);
    }
}

package kiln.server;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.function.BiPredicate;
import java.util.function.Function;

import kiln.http.HttpException;
import kiln.http.Paths;
import kiln.http.Response;
import kiln.http.Request;

/**
 * Middleware that lets a request to a protected path through only with credentials in its
 * {@code Authorization} header: a bearer token (RFC 6750) or a user name and password (the Basic
 * scheme, RFC 7617). Without them, or with wrong ones, the answer is 401 with the
 * {@code WWW-Authenticate} challenge of the scheme (RFC 9110 section 11.6.1); a handler behind it
 * reads who it is with {@code request.attribute(Authentication.USER)}, and so does the access log.
 *
 * <pre>{@code
 * router.filter(Authentication.bearerTokens("kiln", tokens).on("/metrics", "/admin"));
 * router.filter(Authentication.basic("admin", (user, password) -> ...).on("/admin"));
 * }</pre>
 *
 * A path is protected when it is one of {@link #on}'s prefixes or below it, by whole segments
 * ({@code /admin} covers {@code /admin} and {@code /admin/users}, not {@code /administrator});
 * with no prefix, every path is. Unknown paths under a prefix get the 401 too, so an
 * unauthenticated client learns nothing of what is there. Register {@link Cors} before it: a
 * browser's preflight carries no credentials. Send credentials only over TLS (nginx in front).
 */
public final class Authentication implements Filter {
    /** The request attribute holding the authenticated user's name, a {@code String}. */
    public static final String USER = "kiln.user";

    private final String scheme;
    private final String challenge;
    private final Function<String, String> verifier;
    private final List<String> prefixes;

    private Authentication(String scheme, String challenge, Function<String, String> verifier, List<String> prefixes) {
        this.scheme = scheme;
        this.challenge = challenge;
        this.verifier = verifier;
        this.prefixes = prefixes;
    }

    /**
     * @param realm    names the protected space in the challenge, e.g. {@code kiln}
     * @param verifier given the token, returns the name of whom it belongs to, or null when it is
     *                 not valid; must not block (it runs on the front end's thread)
     * @return the filter, protecting every path until {@link #on} narrows it
     */
    public static Authentication bearer(String realm, Function<String, String> verifier) {
        return new Authentication("Bearer", "Bearer realm=\"" + checkRealm(realm) + "\"", verifier, List.of());
    }

    /**
     * Bearer tokens from a fixed list, compared in constant time (a token's digest against each's),
     * so the answer's timing does not tell how much of a guess was right.
     *
     * @param tokens the valid tokens, each at least 16 characters; the user of the N-th is {@code token-N} (from 1)
     * @throws IllegalArgumentException when there are none, or one is shorter than 16 characters
     */
    public static Authentication bearerTokens(String realm, Collection<String> tokens) {
        if (tokens.isEmpty()) throw new IllegalArgumentException("no bearer tokens given");
        List<byte[]> digests = new ArrayList<>();
        for (String t : tokens) {
            if (t.length() < 16) throw new IllegalArgumentException("a bearer token must be at least 16 characters, one has " + t.length());
            digests.add(sha256(t));
        }
        return bearer(realm, token -> {
            byte[] d = sha256(token);
            int match = -1;
            for (int i = 0; i < digests.size(); i++) {
                if (MessageDigest.isEqual(d, digests.get(i))) match = i;  // no early exit: the time is the same for any token
            }
            return match < 0 ? null : "token-" + (match + 1);
        });
    }

    /**
     * @param realm names the protected space in the challenge, e.g. {@code admin}
     * @param check given the user name and password (UTF-8), says whether they are valid; must not block
     * @return the filter, protecting every path until {@link #on} narrows it
     */
    public static Authentication basic(String realm, BiPredicate<String, String> check) {
        return new Authentication("Basic", "Basic realm=\"" + checkRealm(realm) + "\", charset=\"UTF-8\"", credentials -> {
            String pair;
            try {
                pair = new String(Base64.getDecoder().decode(credentials), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                return null;
            }
            int colon = pair.indexOf(':');
            if (colon < 0) return null;
            String user = pair.substring(0, colon);
            return check.test(user, pair.substring(colon + 1)) ? user : null;
        }, List.of());
    }

    /**
     * A prefix is compared with the request's path in its normal form ({@link Paths}), so one that
     * is not normal ({@code /wor%6Cds}, {@code /a/./b}) would match no request and protect nothing:
     * it is refused. A prefix covers only the paths that spell it, so a handler below it must serve
     * each resource under one path ({@link Request#pathParamLong}: {@code /worlds/05} is not {@code /worlds/5}).
     *
     * @param pathPrefixes paths in normal form, e.g. {@code /metrics}; each protects itself and what is below it
     * @return a copy protecting only those paths
     * @throws IllegalArgumentException when a prefix does not start with '/' or is not in normal form, naming
     *                                  it and its normal form: {@code a protected path must be in normal form:
     *                                  '/wor%6Cds' is '/worlds' (RFC 3986 section 6.2.2)}
     */
    public Authentication on(String... pathPrefixes) {
        List<String> list = new ArrayList<>();
        for (String p : pathPrefixes) {
            if (!p.startsWith("/")) throw new IllegalArgumentException("a protected path starts with '/', got '" + p + "'");
            checkNormal(p);
            list.add(p.length() > 1 && p.endsWith("/") ? p.substring(0, p.length() - 1) : p);
        }
        return new Authentication(scheme, challenge, verifier, List.copyOf(list));
    }

    @Override
    public Response before(Request request, Response answer) {
        if (!isProtected(request.path())) return null;
        String authorization = request.header("Authorization");
        String expected = scheme.toLowerCase(Locale.ROOT) + " ";
        if (authorization == null || !authorization.toLowerCase(Locale.ROOT).startsWith(expected)) {
            return refuse(null, "this path needs " + scheme + " credentials (Authorization: " + scheme + " ...)");
        }
        String user = verifier.apply(authorization.substring(expected.length()).trim());
        if (user == null) return refuse(scheme.equals("Bearer") ? "invalid_token" : null, "the credentials are not valid");
        request.attribute(USER, user);
        return null;
    }

    private Response refuse(String error, String detail) {
        return Response.error(401, detail).header("WWW-Authenticate", error == null ? challenge : challenge + ", error=\"" + error + "\"");
    }

    boolean isProtected(String path) {
        if (prefixes.isEmpty()) return true;
        for (String p : prefixes) {
            if (p.equals("/") || path.equals(p) || path.startsWith(p) && path.charAt(p.length()) == '/') return true;
        }
        return false;
    }

    private static void checkNormal(String prefix) {
        String normal;
        try {
            normal = Paths.normalize(prefix);
        } catch (HttpException e) {
            throw new IllegalArgumentException("a protected path must be in normal form: '" + prefix + "' has none (" + e.getMessage() + ")");
        }
        if (!normal.equals(prefix)) {
            throw new IllegalArgumentException("a protected path must be in normal form: '" + prefix + "' is '" + normal
                + "' (RFC 3986 section 6.2.2)");
        }
    }

    private static String checkRealm(String realm) {
        if (realm.isEmpty() || realm.contains("\"") || realm.contains("\\")) {
            throw new IllegalArgumentException("a realm is a non-empty name without quotes or backslashes, got '" + realm + "'");
        }
        return realm;
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}

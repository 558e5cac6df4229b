package kiln.http;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * A route's path: an exact path ({@code /todos}) or a template whose whole segments may be
 * parameters ({@code /todos/{id}}), split at '/'. A request that a router matched to one reads its
 * parameters with {@link Request#pathParam}. Immutable.
 *
 * <pre>{@code
 * PathTemplate.parse("/worlds/{id}").matches("/worlds/42")   // true
 * }</pre>
 */
public final class PathTemplate {
    private final String pattern;
    private final String[] segments;
    private final boolean[] isParam;

    private PathTemplate(String pattern, String[] segments, boolean[] isParam) {
        this.pattern = pattern;
        this.segments = segments;
        this.isParam = isParam;
    }

    /**
     * @param path an exact path or a template, starting with '/', without a query
     * @return the template
     * @throws IllegalArgumentException when the path does not start with '/', holds a query, or has a
     *                                  parameter that is not a whole segment or is repeated
     */
    public static PathTemplate parse(String path) {
        if (!path.startsWith("/")) throw new IllegalArgumentException("path must start with '/': " + path);
        if (path.indexOf('?') >= 0) throw new IllegalArgumentException("path must not hold a query: " + path);
        String[] segments = path.substring(1).split("/", -1);
        boolean[] isParam = new boolean[segments.length];
        Set<String> names = new LinkedHashSet<>();
        for (int i = 0; i < segments.length; i++) {
            String s = segments[i];
            if (s.startsWith("{") && s.endsWith("}") && s.length() > 2) {
                String name = s.substring(1, s.length() - 1);
                if (name.indexOf('{') >= 0 || name.indexOf('}') >= 0 || !names.add(name)) {
                    throw new IllegalArgumentException("bad or repeated parameter " + s + " in " + path);
                }
                segments[i] = name;
                isParam[i] = true;
            } else if (s.indexOf('{') >= 0 || s.indexOf('}') >= 0) {
                throw new IllegalArgumentException("a parameter must be a whole segment, like /todos/{id}: " + path);
            }
        }
        return new PathTemplate(path, segments, isParam);
    }

    /** @return the path as written, e.g. {@code /todos/{id}} */
    public String pattern() {
        return pattern;
    }

    /** @return true when it has no parameter */
    public boolean isExact() {
        for (boolean p : isParam) {
            if (p) return false;
        }
        return true;
    }

    /** @return true when both match the same paths (the same literals, parameters in the same places) */
    public boolean sameShape(PathTemplate o) {
        if (o.segments.length != segments.length) return false;
        for (int i = 0; i < segments.length; i++) {
            if (isParam[i] != o.isParam[i] || (!isParam[i] && !segments[i].equals(o.segments[i]))) return false;
        }
        return true;
    }

    /** @return true when {@code path} (in normal form, {@link Paths}) is one this matches, e.g. {@code /worlds/42} */
    public boolean matches(String path) {
        if (!path.startsWith("/")) return false;
        int start = 1;
        for (int i = 0; i < segments.length; i++) {
            int end = path.indexOf('/', start);
            boolean last = i == segments.length - 1;
            if (last != (end < 0)) return false;
            if (end < 0) end = path.length();
            if (isParam[i]) {
                if (end == start) return false;
            } else if (end - start != segments[i].length() || !path.startsWith(segments[i], start)) {
                return false;
            }
            start = end + 1;
        }
        return true;
    }

    /**
     * @param path a path this {@link #matches}
     * @param name a parameter of this template, e.g. {@code id} of {@code /todos/{id}}
     * @return that segment of {@code path}, percent-decoded as UTF-8
     * @throws IllegalArgumentException when the template has no parameter {@code name}
     * @throws HttpException            400 when the segment is badly percent-encoded
     */
    public String param(String path, String name) {
        int start = 1;
        for (int i = 0; i < segments.length; i++) {
            int end = path.indexOf('/', start);
            if (end < 0) end = path.length();
            if (isParam[i] && segments[i].equals(name)) return decode(path.substring(start, end));
            start = end + 1;
        }
        throw new IllegalArgumentException(pattern + " has no parameter {" + name + "}");
    }

    private static String decode(String segment) {
        if (segment.indexOf('%') < 0) return segment;
        try {
            return URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new HttpException(400, "malformed path: " + e.getMessage());
        }
    }

    @Override
    public String toString() {
        return pattern;
    }
}

package kiln.demo;

import kiln.http.PathTemplate;
import kiln.server.AbstractRouter;
import kiln.server.StepHandler;

/**
 * One entry of the endpoint registry ({@link Endpoints#ALL}): what the index page, every
 * {@code --help} and the conformance suite's walk show of it, and the logic that answers it.
 */
public final class Endpoint {
    /**
     * Binds an endpoint's logic (a {@link StepHandler}: its response, or a wait and the rest) to the demo
     * database and the router it is registered on (its metrics and health) when a server starts.
     * State the endpoint keeps across requests (a cache) is created here, once per server.
     */
    @FunctionalInterface
    public interface Binding {
        StepHandler bind(DemoDb demo, AbstractRouter<?, ?> router);
    }

    /** The request method, e.g. {@code GET}. */
    public final String method;
    /** The path: exact, e.g. {@code /queries}, or a template, e.g. {@code /worlds/{id}}. */
    public final String path;
    /** The path with its parameters as a reader writes them, e.g. {@code /queries?queries=N}. */
    public final String usage;
    /** A target that exercises it, e.g. {@code /queries?queries=20}: the index page's link. */
    public final String example;
    /** What it answers, in a few words (plain text, no markup). */
    public final String description;
    final Binding binding;

    Endpoint(String method, String path, String usage, String example, String description, Binding binding) {
        int q = example.indexOf('?');
        if (!PathTemplate.parse(path).matches(q < 0 ? example : example.substring(0, q))) {
            throw new IllegalArgumentException("example " + example + " is not a target of " + path);
        }
        this.method = method;
        this.path = path;
        this.usage = usage;
        this.example = example;
        this.description = description;
        this.binding = binding;
    }

    @Override
    public String toString() {
        return method + " " + usage;
    }
}

package kiln.server;

/**
 * The router of the front ends on a server library (Jetty, Undertow, Comsat), whose handlers are
 * {@link StepHandler}s: each front end runs the {@link Step}s its own way ({@link Step#runBlocking},
 * {@link Step#runAsync}, a Quasar fiber), after {@link #begin(String, String, String)} routed the
 * request the library parsed.
 */
public final class StepRouter extends AbstractRouter<StepHandler, StepRouter> {
    /** @param metrics where every request is counted and timed; {@link Metrics#off()} for none */
    public StepRouter(Metrics metrics) {
        super(metrics);
    }

    /**
     * @return the exchange's first step: the router's own answer, or its handler run up to its first
     *         wait (a throwing handler gives the failure policy's response). Send the final response with
     *         {@link Exchange#respond}, which records it.
     */
    public static Step firstStep(Exchange<StepHandler> exchange) {
        return exchange.hasResponse() ? Step.of(exchange.response()) : StepHandler.start(exchange.handler(), exchange.request());
    }

    @Override
    protected StepHandler fromSteps(StepHandler logic) {
        return logic;
    }
}

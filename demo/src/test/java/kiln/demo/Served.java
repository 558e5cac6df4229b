package kiln.demo;

import kiln.http.Response;
import kiln.server.AbstractRouter;
import kiln.server.Metrics;
import kiln.server.Step;
import kiln.server.StepHandler;
import kiln.server.StepRouter;

/** The demo's endpoints on the router of the library front ends, driven as those front ends drive it. */
final class Served {
    final StepRouter router;

    Served(DemoDb demo) {
        this(demo, Metrics.create(demo.db()));
    }

    Served(DemoDb demo, Metrics metrics) {
        router = Endpoints.addTo(new StepRouter(metrics), demo);
    }

    Metrics metrics() {
        return router.metrics();
    }

    /** @return the request's first step, unrecorded: the response, or its first wait */
    Step start(String method, String rawPath, String rawQuery) {
        return StepRouter.firstStep(router.begin(method, rawPath, rawQuery));
    }

    /** @return the response to a whole request, run the way a blocking front end runs it, and recorded as sent */
    Response request(String method, String rawPath, String rawQuery) {
        AbstractRouter.Exchange<StepHandler> exchange = router.begin(method, rawPath, rawQuery);
        return exchange.respond(Step.runBlocking(StepRouter.firstStep(exchange)));
    }
}

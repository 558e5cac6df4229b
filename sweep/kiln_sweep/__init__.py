"""kiln's keep-alive concurrency sweep (./ab-sweep.sh): plan, servers, load clients, /proc readings,
the run loop and the report. Everything but kiln_sweep.charts runs on the standard library alone."""


class SweepError(Exception):
    """Ends the sweep with its message on stderr and exit status 1 (2 when usage is True)."""

    def __init__(self, message, usage=False):
        super().__init__(message)
        self.usage = usage

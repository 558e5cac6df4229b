"""kiln's keep-alive concurrency sweep (./ab-sweep.sh): plan, servers, load clients, /proc readings,
the run loop and the report. Everything but kiln_sweep.charts runs on the standard library alone."""

import sys
from pathlib import Path

# sweep/ (templates, DummyServer.java, the venv) and the repository root (frontends.conf, modules).
SWEEP_DIR = Path(__file__).resolve().parent.parent
ROOT = SWEEP_DIR.parent


class SweepError(Exception):
    """Ends the sweep with its message on stderr and exit status 1 (2 when usage is True)."""

    def __init__(self, message, usage=False):
        super().__init__(message)
        self.usage = usage


def note(message, file=sys.stdout):
    """One line of the sweep's own, "ab-sweep: message", flushed at once so it stays in order with the
    output of the processes it runs."""
    print(f"ab-sweep: {message}", file=file, flush=True)

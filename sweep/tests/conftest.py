"""Shared paths and the one real quick sweep the end-to-end tests read."""

import subprocess
import sys
from pathlib import Path

import pytest

SWEEP = Path(__file__).resolve().parent.parent
ROOT = SWEEP.parent
DATA = SWEEP / "testdata"
VENV_PY = SWEEP / ".venv" / "bin" / "python"


def ab_sweep(*args, preexec_fn=None, timeout=600):
    """./ab-sweep.sh ARGS, run as a user would (system python3 through the wrapper); output captured."""
    return subprocess.run([str(ROOT / "ab-sweep.sh"), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=preexec_fn, check=False)


@pytest.fixture(scope="session")
def quick_sweep(tmp_path_factory):
    """A real `./ab-sweep.sh kilim --quick` (dummy, nginx, netty and kilim on loopback, about a minute); its
    results directory and the completed process."""
    out = tmp_path_factory.mktemp("quick") / "results"
    done = ab_sweep("kilim", "--quick", "--no-install", "--out", out)
    sys.stdout.write(done.stdout)
    return out, done

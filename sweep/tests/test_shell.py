"""The shell that is left: the ./ab-sweep.sh wrapper and the script it relies on to pick a java."""

import shutil
import subprocess

import pytest

from conftest import ROOT


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed (see test_prerequisites)")
def test_shellcheck_passes():
    done = subprocess.run(["shellcheck", "-x", "ab-sweep.sh", "scripts/find-java.sh"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wrapper_stays_thin():
    assert len((ROOT / "ab-sweep.sh").read_text().splitlines()) < 80

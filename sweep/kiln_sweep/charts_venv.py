"""sweep/.venv: the third-party libraries of the charts and the tests (sweep/requirements.txt), made on
first use; and the report of a results directory, drawn by kiln_sweep.charts on the venv's python, or
written here on the standard library alone (CSV, JSON and the table) when there is no venv."""

import hashlib
import os
import subprocess
import sys

from kiln_sweep import SWEEP_DIR, note, report

VENV = SWEEP_DIR / ".venv"
REQUIREMENTS = SWEEP_DIR / "requirements.txt"


def _requirements_hash():
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def ready():
    """True when the venv holds exactly the libraries requirements.txt pins now."""
    marker = VENV / ".requirements.sha256"
    return (VENV / "bin" / "python").is_file() and marker.is_file() and marker.read_text().strip() == _requirements_hash()


def setup(install):
    """The venv's python when the chart libraries are ready (creating the venv first if allowed and
    needed), else None: then only CSV, JSON and the table are written."""
    if ready():
        return VENV / "bin" / "python"
    if not install:
        note(f"no chart libraries in {VENV} (--no-install): writing CSV, JSON and the table only; run "
             "./ab-sweep.sh --setup for the PNG and HTML")
        return None
    note(f"first run: creating {VENV} with the libraries pinned in sweep/requirements.txt (matplotlib, plotly, "
         "Jinja2, aiohttp, pytest; about a minute, needs PyPI)")
    ok = subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=False).returncode == 0 and \
        subprocess.run([str(VENV / "bin" / "pip"), "install", "--disable-pip-version-check", "--quiet", "--timeout",
                        "30", "--retries", "2", "-r", str(REQUIREMENTS)], check=False).returncode == 0
    if not ok:
        note("could not install the chart libraries (see pip's message above): writing CSV, JSON and the table "
             "only. Fix it and run ./ab-sweep.sh --setup, then ./ab-sweep.sh --report DIR")
        return None
    (VENV / ".requirements.sha256").write_text(_requirements_hash() + "\n")
    return VENV / "bin" / "python"


def write_report(results_dir, python):
    """The report of a results directory; its exit status. With the venv's `python`, charts too (python
    -m kiln_sweep.charts in a child process); without it (None), CSV, JSON and the table, here."""
    if python is None:
        return report.main([str(results_dir)])
    env = dict(os.environ, PYTHONPATH=str(SWEEP_DIR))
    return subprocess.run([str(python), "-m", "kiln_sweep.charts", str(results_dir)], env=env,
                          check=False).returncode

"""The tools the sweep's tests use; a missing one is named with the package that brings it."""

import shutil

from conftest import VENV_PY

TOOLS = ["shellcheck", "ab", "nginx", "java", "javac", "chromium", "taskset", "ss", "timeout", "python3"]


def test_prerequisites_installed():
    missing = [t for t in TOOLS if not shutil.which(t)]
    assert not missing, (f"missing: {' '.join(missing)} (apt-get install -y shellcheck apache2-utils nginx-light "
                         "chromium openjdk-17-jdk-headless util-linux iproute2 coreutils python3-venv)")
    assert VENV_PY.is_file(), f"no {VENV_PY}: run ./ab-sweep.sh --setup (installs sweep/requirements.txt)"

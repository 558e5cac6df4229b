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


def test_find_java_names_the_jdk_to_install_when_none_fits(tmp_path):
    # no $JAVA and an empty JDK directory: the line the conformance suite and the loom tests fail with
    done = subprocess.run([str(ROOT / "scripts" / "find-java.sh"), "21+"], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "JAVA": "/nonexistent/java", "KILN_JVM_DIR": str(tmp_path)})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (f"find-java.sh: no JDK 21 or newer in $JAVA or {tmp_path}; install one (Debian 13 / Ubuntu "
                                   "24.04: openjdk-21-jdk-headless; Debian 12: Temurin 21+ from Adoptium's apt repository)"
                                   " or set JAVA=/path/to/bin/java")


def test_find_java_picks_a_jdk_21_or_newer_from_the_jdk_directory(tmp_path):
    jdk = tmp_path / "some-jdk-25" / "bin"
    jdk.mkdir(parents=True)
    (tmp_path / "some-jdk-25" / "release").write_text('JAVA_VERSION="25.0.1"\n')
    (jdk / "java").write_text("#!/bin/sh\n")
    (jdk / "java").chmod(0o755)
    done = subprocess.run([str(ROOT / "scripts" / "find-java.sh"), "21+"], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "JAVA": "/nonexistent/java", "KILN_JVM_DIR": str(tmp_path)})
    assert (done.returncode, done.stdout.strip()) == (0, str(jdk / "java")), done.stderr

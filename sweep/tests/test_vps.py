"""--vps: the cgroup plumbing against a fake cgroup tree (files where the kernel has control files), the
exit status 2 where it cannot run, and one real `./ab-sweep.sh --vps --quick` where cgroup v1's cpuset
and memory controllers are writable."""

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, ab_sweep
from kiln_sweep import SweepError, cgroup, records


def fake_v1(root, memsw=True, own="/"):
    """A cgroup v1 tree as /sys/fs/cgroup has it: cpuset/ and memory/ with their control files, and
    this process's own groups at `own` below them."""
    cs, mem = root / "cpuset" / own.lstrip("/"), root / "memory" / own.lstrip("/")
    for d in (root / "cpuset", root / "memory", cs, mem):
        d.mkdir(parents=True, exist_ok=True)
    for d in {root / "cpuset", cs}:
        (d / "cpuset.cpus").write_text("0-1\n")
        (d / "cpuset.mems").write_text("0\n")
        (d / "cgroup.procs").write_text("")
    for d in {root / "memory", mem}:
        (d / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        (d / "cgroup.procs").write_text("")
    if memsw:
        (mem / "memory.memsw.limit_in_bytes").write_text("9223372036854771712\n")
    return root


def kernel_rmdir(path):
    """rmdir as cgroupfs does it: a group with tasks is busy; its control files go with it."""
    procs = Path(path) / "cgroup.procs"
    if procs.is_file() and procs.read_text().split():
        raise OSError(16, "Device or resource busy")
    shutil.rmtree(path)


def self_cgroup(tmp_path, text):
    f = tmp_path / "self-cgroup"
    f.write_text(text)
    return f


# ---------------------------------------------------------------------------------------------
# Where the groups go, and when --vps cannot run
# ---------------------------------------------------------------------------------------------
def test_own_paths_reads_each_v1_hierarchy_and_ignores_v2(tmp_path):
    f = self_cgroup(tmp_path, "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n2:cpu,cpuacct:/x\n0::/\n")
    assert cgroup.own_paths(f) == {"name=systemd": "/", "memory": "/process_api/abc", "cpuset": "/", "cpu": "/x",
                                   "cpuacct": "/x"}


def test_groups_are_made_under_this_process_own_groups(tmp_path):
    root = fake_v1(tmp_path / "cg", own="/process_api/abc")
    f = self_cgroup(tmp_path, "4:memory:/process_api/abc\n3:cpuset:/\n")
    parents = cgroup.check(root, f)
    assert parents == {"cpuset": root / "cpuset", "memory": root / "memory" / "process_api" / "abc"}


def test_v2_is_refused_with_the_reason(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    with pytest.raises(cgroup.CgroupUnavailable, match="cgroup v2 .* supports cgroup v1 only"):
        cgroup.check(tmp_path)


@pytest.mark.parametrize("missing", ["cpuset", "memory"])
def test_a_missing_controller_is_refused(tmp_path, missing):
    root = fake_v1(tmp_path)
    shutil.rmtree(root / missing)
    with pytest.raises(cgroup.CgroupUnavailable, match=f"no cgroup v1 {missing} controller at {root / missing}"):
        cgroup.check(root)


def test_cli_exits_2_when_the_controllers_are_missing(tmp_path):
    done = subprocess.run([str(ROOT / "ab-sweep.sh"), "--vps", "--quick", "kilim"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, KILN_SWEEP_CGROUP_ROOT=str(tmp_path)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--vps: no cgroup v1 cpuset controller at {tmp_path}/cpuset" in done.stderr
    assert "Servers:" not in done.stdout, "it printed a plan it cannot run"


def test_cli_exits_2_on_cgroup_v2(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    done = subprocess.run([str(ROOT / "ab-sweep.sh"), "--vps", "--plan-only", "kilim"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, KILN_SWEEP_CGROUP_ROOT=str(tmp_path)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cgroup v2" in done.stderr and "cgroup v1 only" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the sweep as another user")
def test_cli_exits_2_when_the_real_controllers_are_not_writable_by_the_user():
    # A real check, not a fake: as "nobody" the real /sys/fs/cgroup groups are not writable.
    if not Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").is_file():
        pytest.skip("no cgroup v1 memory controller on this machine")
    nobody = pwd.getpwnam("nobody")
    done = subprocess.run([str(ROOT / "ab-sweep.sh"), "--vps", "--plan-only", "kilim"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, HOME="/tmp"),
                          preexec_fn=lambda: (os.setgid(nobody.pw_gid), os.setuid(nobody.pw_uid)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cgroup under" in done.stderr and "not writable by this user" in done.stderr, done.stderr


# ---------------------------------------------------------------------------------------------
# One group: create, join, read, remove
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def parents(tmp_path):
    return cgroup.check(fake_v1(tmp_path / "cg"), tmp_path / "no-such-file")


@pytest.mark.parametrize("memsw", [True, False])
def test_create_sets_one_cpu_its_memory_node_and_1_gib(tmp_path, memsw):
    parents = cgroup.check(fake_v1(tmp_path / "cg", memsw=memsw), tmp_path / "none")
    (parents["cpuset"] / "cpuset.mems").write_text("0-1\n")
    g = cgroup.VpsCgroup(parents, "kiln-vps-1-1", 1, rmdir=kernel_rmdir).create()
    cs, mem = parents["cpuset"] / "kiln-vps-1-1", parents["memory"] / "kiln-vps-1-1"
    assert (cs / "cpuset.cpus").read_text() == "1\n"
    assert (cs / "cpuset.mems").read_text() == "0-1\n", "cpuset.mems is copied from the parent"
    assert (mem / "memory.limit_in_bytes").read_text() == f"{1 << 30}\n"
    assert (mem / "memory.memsw.limit_in_bytes").is_file() == memsw
    if memsw:
        assert (mem / "memory.memsw.limit_in_bytes").read_text() == f"{1 << 30}\n"
    g.remove()
    assert not cs.exists() and not mem.exists()


def test_a_wrapped_command_is_in_every_group_before_it_runs(parents):
    g = cgroup.VpsCgroup(parents, "kiln-vps-1-2", 0, rmdir=kernel_rmdir).create()
    for p in g.procs_files():
        p.write_text("")
    # The wrapper writes its pid, then execs: the command runs as that same pid.
    out = subprocess.run(g.wrap(["sh", "-c", "echo $$"]), capture_output=True, text=True, check=True).stdout
    pid = out.strip()
    assert [p.read_text().strip() for p in g.procs_files()] == [pid, pid]
    for p in g.procs_files():
        p.write_text("")
    g.remove()


def test_a_command_does_not_run_when_it_cannot_join(parents, tmp_path):
    g = cgroup.VpsCgroup(parents, "kiln-vps-1-3", 0, rmdir=kernel_rmdir).create()
    g.dirs["memory"] = tmp_path / "gone"          # joining the memory group fails
    marker = tmp_path / "ran"
    done = subprocess.run(g.wrap(["touch", str(marker)]), capture_output=True, text=True, check=False)
    assert done.returncode != 0 and not marker.exists()
    g.dirs["memory"] = parents["memory"] / "kiln-vps-1-3"
    (g.dirs["cpuset"] / "cgroup.procs").write_text("")   # the shell that joined has exited
    g.remove()


def test_read_reports_peak_failcnt_and_oom_kills_since_the_group_was_made(parents):
    mem = parents["memory"] / "kiln-vps-1-4"
    g = cgroup.VpsCgroup(parents, "kiln-vps-1-4", 0, rmdir=kernel_rmdir).create()
    (mem / "memory.max_usage_in_bytes").write_text("734003200\n")
    (mem / "memory.failcnt").write_text("17\n")
    (mem / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 1\noom_kill 2\n")
    assert g.read() == cgroup.Reading(peak_bytes=734003200, failcnt=17, oom_kills=2, under_oom=True)
    g.reset_peak()
    assert (mem / "memory.max_usage_in_bytes").read_text() == "0\n"
    # A kernel before 4.13 has no oom_kill line: kills are unknown, not 0.
    (mem / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")
    assert g.read().oom_kills is None
    g.remove()


def test_remove_kills_what_is_still_inside_then_removes(parents):
    g = cgroup.VpsCgroup(parents, "kiln-vps-1-5", 0, rmdir=kernel_rmdir).create()
    sleeper = subprocess.Popen(["sleep", "60"])
    procs = g.procs_files()
    for p in procs:
        p.write_text(f"{sleeper.pid}\n")

    def rmdir_after_exit(path):
        # The kernel empties cgroup.procs when the task exits.
        if sleeper.poll() is not None or sleeper.wait(timeout=5) is not None:
            for p in procs:
                if p.is_file():
                    p.write_text("")
        kernel_rmdir(path)

    g._rmdir = rmdir_after_exit
    assert g.remove(wait_s=0.3) == [sleeper.pid]
    assert sleeper.wait(timeout=5) == -9
    assert not g.dirs["cpuset"].exists() and not g.dirs["memory"].exists()


def test_remove_says_which_group_it_could_not_remove(parents):
    g = cgroup.VpsCgroup(parents, "kiln-vps-1-6", 0, rmdir=lambda p: (_ for _ in ()).throw(OSError(16, "Device or resource busy"))).create()
    with pytest.raises(SweepError, match="could not remove .*kiln-vps-1-6: Device or resource busy"):
        g.remove(wait_s=0)


def test_only_groups_of_dead_sweeps_are_stale(parents):
    dead = subprocess.Popen(["true"])
    dead.wait()
    for name in (f"kiln-vps-{dead.pid}-1", f"kiln-vps-{os.getpid()}-1", "other-group"):
        for c in cgroup.CONTROLLERS:
            (parents[c] / name).mkdir()
            (parents[c] / name / "cgroup.procs").write_text("")
    removed = cgroup.remove_stale(parents, rmdir=kernel_rmdir)
    assert sorted(removed) == sorted(parents[c] / f"kiln-vps-{dead.pid}-1" for c in cgroup.CONTROLLERS)
    assert (parents["memory"] / f"kiln-vps-{os.getpid()}-1").is_dir() and (parents["memory"] / "other-group").is_dir()


# ---------------------------------------------------------------------------------------------
# The real thing
# ---------------------------------------------------------------------------------------------
def _writable():
    try:
        cgroup.check()
        return ""
    except SweepError as e:
        return str(e)


@pytest.mark.skipif(bool(_writable()), reason=f"cgroup v1 cpuset/memory not writable here: {_writable()}")
def test_real_quick_vps_sweep(tmp_path):
    out = tmp_path / "vps"
    done = ab_sweep("--vps", "--quick", "--no-anchors", "--no-install", "nginx", "kilim", "loom", "--out", out)
    sys.stdout.write(done.stdout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    settings = records.read_settings(out)
    assert settings.vps.startswith("one cgroup (v1) per server run: cpuset.cpus=")
    runs = records.read(out, records.RUNS, records.TimedRun)
    assert {(r.server, r.concurrency) for r in runs} == {(s, c) for s in ("nginx", "kilim", "loom") for c in (10, 100)}
    for r in runs:
        assert r.cgroup.startswith("kiln-vps-") and r.cgroup_peak_bytes > 1 << 20, r
        assert r.cgroup_oom_kills == 0 and r.server_alive, r
    # Server and client ran inside the group: every command line joins it first.
    lines = (out / "commands.log").read_text().splitlines()
    assert lines and all(re.match(r"sh -c 'echo \$\$ > .*kiln-vps-\d+-\d+/cgroup\.procs'", line) for line in lines), lines
    assert sum(" ab -q -k" in line for line in lines) == 2 * 3 * 2, "warm-up and timed run of 2 steps x 3 servers"
    # Every group is gone afterwards.
    for name in {r.cgroup for r in runs}:
        for base in ("/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/memory"):
            assert not list(Path(base).rglob(name)), f"{name} left under {base}"
    # The table has the --vps columns; loom (JDK 21+) reports its carrier pinning.
    assert re.search(r"server\s+c\s+req/s\s+failed\s+p99 ms\s+server RSS MB\s+cgroup peak MB\s+OOM-killed", done.stdout)
    assert re.search(r"kilim\s+100\s+[\d,]+\s+0\s+[\d.]+\s+\d+\s+\d+\s+no", done.stdout)
    if any(r.pinned_events is not None for r in runs):
        assert re.search(r"loom\s+c=10: \d+, c=100: \d+; total \d+ events? >= 20 ms", done.stdout)
    doc = json.loads((out / "summary.json").read_text())
    assert all(s["oom_killed"] == "no" and s["cgroup_peak_mb_max"] > 1 for s in doc["summary"])


@pytest.mark.skipif(bool(_writable()), reason=f"cgroup v1 cpuset/memory not writable here: {_writable()}")
def test_sigterm_removes_the_group(tmp_path):
    out = tmp_path / "stopped"
    proc = subprocess.Popen([str(ROOT / "ab-sweep.sh"), "--vps", "--quick", "--no-anchors", "--no-install", "dummy",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / records.RUNS).is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.terminate()
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stdout + stderr
    [name] = {r.cgroup for r in records.read(out, records.RUNS, records.TimedRun)}
    for base in ("/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/memory"):
        assert not list(Path(base).rglob(name)), f"{name} left under {base} after SIGTERM"

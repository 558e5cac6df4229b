"""--vps: a cgroup (v1) that gives the server and the load client together one CPU and 1 GiB of memory,
as on a $5 VPS where the client shares the box, and what it saw (peak memory, OOM kills).

Why cpuset and not cpu.cfs_quota_us: a VPS's vCPU is one CPU at a time. A CFS quota of 100 ms per
100 ms period lets the server's threads and ab run on both cores at once until the quota is spent,
then stops all of them for the rest of the period: bursts and 50 ms stalls that no VPS shows, and
the JVM would still see two CPUs in its affinity mask. A cpuset of one CPU serialises them as a
vCPU does, and the JVM sizes itself (GC threads, carriers, ForkJoin pools) for one CPU.

The groups are made under this process's own group of each controller (read from /proc/self/cgroup),
not at the top of the hierarchy: whatever limits the sweep itself runs under still apply, and
nothing outside that subtree is touched. The root path is a parameter so that the tests run the
same code against a fake directory tree.

cgroup v2 (one unified hierarchy: cpu.max, memory.max, cpuset.cpus in a subtree with the controllers
enabled) is not supported yet: the sweep says so and exits 2.
"""

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kiln_sweep import SweepError

ROOT = Path("/sys/fs/cgroup")
# 1 GiB: what a $5 VPS has.
MEMORY_BYTES = 1 << 30
CONTROLLERS = ("cpuset", "memory")
PREFIX = "kiln-vps-"
# /proc/self/cgroup says where this process sits in each v1 hierarchy (controller -> path).
SELF_CGROUP = Path("/proc/self/cgroup")


class CgroupUnavailable(SweepError):
    """--vps cannot run here: the message says why. Exit status 2."""

    def __init__(self, message):
        super().__init__(message, usage=False)
        self.exit_status = 2


def own_paths(self_cgroup=SELF_CGROUP):
    """{controller: path of this process's group in that v1 hierarchy} from /proc/self/cgroup lines
    "ID:controller[,controller]:/path"; v2's "0::/path" line is ignored."""
    paths = {}
    try:
        text = Path(self_cgroup).read_text()
    except OSError:
        return paths
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1]:
            for c in parts[1].split(","):
                paths[c] = parts[2]
    return paths


def check(root=ROOT, self_cgroup=SELF_CGROUP):
    """{controller: directory under which this sweep may create its groups}; raises CgroupUnavailable
    (exit 2) with the reason when cgroup v1's cpuset or memory controller is not there or not writable."""
    root = Path(root)
    if (root / "cgroup.controllers").is_file():
        raise CgroupUnavailable(
            f"--vps: {root} is a cgroup v2 (unified) hierarchy; --vps supports cgroup v1 only so far (cpuset and "
            "memory controllers under /sys/fs/cgroup/cpuset and /sys/fs/cgroup/memory). On v2 limit a shell by hand "
            "instead, e.g. systemd-run --scope -p AllowedCPUs=1 -p MemoryMax=1G -p MemorySwapMax=0 ./ab-sweep.sh ...")
    own = own_paths(self_cgroup)
    parents = {}
    for c in CONTROLLERS:
        mount = root / c
        marker = mount / ("cpuset.cpus" if c == "cpuset" else "memory.limit_in_bytes")
        if not marker.is_file():
            raise CgroupUnavailable(
                f"--vps: no cgroup v1 {c} controller at {mount} (no {marker.name}): --vps needs cgroup v1's cpuset and "
                "memory controllers mounted there, writable by this user (root)")
        parent = mount / own.get(c, "/").lstrip("/")
        if not parent.is_dir():
            parent = mount
        if not os.access(parent, os.W_OK | os.X_OK):
            raise CgroupUnavailable(
                f"--vps: cannot create a {c} cgroup under {parent}: not writable by this user (uid {os.geteuid()}; "
                "a read-only /sys/fs/cgroup, as in most containers, or not root). Run as root on a host or a VM "
                "whose cgroup v1 controllers are writable, or without --vps")
        parents[c] = parent
    return parents


def _write(path, value):
    try:
        Path(path).write_text(f"{value}\n")
    except OSError as e:
        raise SweepError(f"--vps: cannot write {value!r} to {path}: {e.strerror or e}") from e


def _read_int(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _read_keys(path):
    """A "key value" per line file (memory.oom_control, memory.stat) as {key: int}."""
    out = {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        k, _, v = line.partition(" ")
        if v.strip().lstrip("-").isdigit():
            out[k] = int(v)
    return out


@dataclass
class Reading:
    """What the memory cgroup saw since the last reset: peak bytes (memory.max_usage_in_bytes), how
    often the limit was hit (memory.failcnt), the kernel's OOM kills in the group so far (oom_kill of
    memory.oom_control; None on kernels older than 4.13, which do not count them) and under_oom."""
    peak_bytes: Optional[int]
    failcnt: Optional[int]
    oom_kills: Optional[int]
    under_oom: bool


class VpsCgroup:
    """One cpuset + memory group, e.g. kiln-vps-<pid>-3 under this process's own groups. Use:
    g = VpsCgroup(parents, name, cpu); g.create(); cmd = g.wrap(cmd); ...; g.read(); g.remove()."""

    def __init__(self, parents, name, cpu, memory_bytes=MEMORY_BYTES, rmdir=os.rmdir):
        self.parents = parents
        self.name = name
        self.cpu = cpu
        self.memory_bytes = memory_bytes
        self.dirs = {c: Path(parents[c]) / name for c in CONTROLLERS}
        self.created = []
        self._rmdir = rmdir
        self.oom_kills_at_start = 0

    @property
    def memory(self):
        return self.dirs["memory"]

    def create(self):
        for c in CONTROLLERS:
            try:
                self.dirs[c].mkdir()
            except OSError as e:
                self.remove()
                raise SweepError(f"--vps: cannot create {self.dirs[c]}: {e.strerror or e}") from e
            self.created.append(c)
        cs = self.dirs["cpuset"]
        # A new cpuset group starts with no CPUs and no memory nodes: no task may join it before both are set.
        _write(cs / "cpuset.cpus", self.cpu)
        mems = (Path(self.parents["cpuset"]) / "cpuset.mems").read_text().strip() if \
            (Path(self.parents["cpuset"]) / "cpuset.mems").is_file() else ""
        _write(cs / "cpuset.mems", mems or "0")
        m = self.memory
        _write(m / "memory.limit_in_bytes", self.memory_bytes)
        # With swap accounting (the parent has memsw files, so the new group has them too), memory+swap gets
        # the same limit: a VPS without swap.
        if (Path(self.parents["memory"]) / "memory.memsw.limit_in_bytes").is_file():
            _write(m / "memory.memsw.limit_in_bytes", self.memory_bytes)
        self.oom_kills_at_start = _read_keys(m / "memory.oom_control").get("oom_kill", 0)
        return self

    def procs_files(self):
        return [self.dirs[c] / "cgroup.procs" for c in CONTROLLERS]

    def wrap(self, cmd):
        """`cmd` started inside the group: a shell joins it (every controller) and then execs `cmd`, so
        the process (same pid) and all it starts are in the group from their first instruction."""
        joins = " && ".join(f"echo $$ > '{p}'" for p in self.procs_files())
        return ["sh", "-c", f"{joins} && exec \"$@\"", "kiln-vps", *cmd]

    def reset_peak(self):
        """memory.max_usage_in_bytes restarts from the current usage (writing 0 resets it in v1)."""
        _write(self.memory / "memory.max_usage_in_bytes", 0)

    def read(self):
        m = self.memory
        oom = _read_keys(m / "memory.oom_control")
        kills = oom.get("oom_kill")
        return Reading(peak_bytes=_read_int(m / "memory.max_usage_in_bytes"), failcnt=_read_int(m / "memory.failcnt"),
                       oom_kills=None if kills is None else kills - self.oom_kills_at_start,
                       under_oom=bool(oom.get("under_oom", 0)))

    def pids(self):
        out = set()
        for p in self.procs_files():
            try:
                out |= {int(x) for x in p.read_text().split()}
            except (OSError, ValueError):
                pass
        return sorted(out)

    def remove(self, wait_s=10):
        """Removes the group's directories. Processes still in it (only ones this sweep started there)
        are killed first; returns the pids that had to be killed."""
        killed = []
        if not self.created:
            return killed
        deadline = time.monotonic() + wait_s
        left = self.pids()
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = self.pids()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        errors = []
        for c in reversed(self.created):
            for _ in range(50):
                try:
                    self._rmdir(self.dirs[c])
                    break
                except FileNotFoundError:
                    break
                except OSError as e:  # EBUSY while a killed task is still exiting
                    err = e
                    time.sleep(0.1)
            else:
                errors.append(f"{self.dirs[c]}: {err.strerror or err}")
        self.created = []
        if errors:
            raise SweepError("--vps: could not remove " + "; ".join(errors))
        return killed


def stale_groups(parents):
    """Groups a sweep that was killed (SIGKILL, power loss) left behind: kiln-vps-<pid>-* whose pid is
    gone. Only those, and only when empty, are removed by remove_stale()."""
    out = []
    for c in CONTROLLERS:
        for d in Path(parents[c]).glob(PREFIX + "*"):
            pid = d.name[len(PREFIX):].split("-")[0]
            if d.is_dir() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                out.append(d)
    return out


def remove_stale(parents, rmdir=os.rmdir):
    removed = []
    for d in stale_groups(parents):
        try:
            if not (d / "cgroup.procs").read_text().split():
                rmdir(d)
                removed.append(d)
        except OSError:
            pass
    return removed

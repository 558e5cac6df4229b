#!/usr/bin/env python3
"""Runs a command inside a VPS-like cgroup (v1): a cpuset of the given CPUs and a memory limit, as
`./ab-sweep.sh --vps` does for each server run, e.g. a 2-vCPU, 1 GB box for scripts/cpu-ab.py:

    scripts/in-vps-cgroup.py --cpus 0-1 --memory 1g -- scripts/cpu-ab.py --shared ...

Everything the command starts stays in the group. Prints the group's peak memory and OOM kills when
the command ends, removes the group, and exits with the command's status. Needs root and cgroup v1's
cpuset and memory controllers writable (exit status 2 otherwise), as --vps does.
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "sweep"))
from kiln_sweep import SweepError, cgroup  # noqa: E402  the sweep's --vps groups, the same code

UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size(text):
    """'1g', '768m', '1073741824' -> bytes."""
    unit = UNITS.get(text[-1:].lower())
    try:
        return int(text[:-1]) * unit if unit else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 1g or 768m, got '{text}'") from None


def main(argv):
    p = argparse.ArgumentParser(prog="scripts/in-vps-cgroup.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--cpus", required=True, help="the cpuset, e.g. 0 or 0-1")
    p.add_argument("--memory", type=size, default=cgroup.MEMORY_BYTES, help="memory limit (default 1g)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the command after --")
    try:
        parents = cgroup.check()
        group = cgroup.VpsCgroup(parents, f"{cgroup.PREFIX}{os.getpid()}-run", args.cpus, args.memory)
        group.create()
    except SweepError as e:
        print(f"in-vps-cgroup: {e}", file=sys.stderr)
        return getattr(e, "exit_status", 1)
    try:
        status = subprocess.run(group.wrap(command), check=False).returncode
        seen = group.read()
        print(f"in-vps-cgroup: cpus {args.cpus}, memory limit {args.memory >> 20} MiB: peak {seen.peak_bytes >> 20} MiB, "
              f"OOM kills {seen.oom_kills}", file=sys.stderr)
    finally:
        group.remove()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
